package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toolrouterd/toolrouterd/internal/access"
	"github.com/toolrouterd/toolrouterd/internal/oauthconn"
)

// Connections are the users' oauth connections (oauthconn.Connector,
// docs/backend-auth.md "oauth").
type Connections interface {
	Connections(ctx context.Context, who oauthconn.Who) ([]oauthconn.Connection, error)
	Disconnect(ctx context.Context, who oauthconn.Who, backend string) (bool, error)
	ServeConnect(w http.ResponseWriter, r *http.Request, state string)
	ServeCallback(w http.ResponseWriter, r *http.Request)
}

// oauthOff answers the oauth endpoints when the token vault is off.
func oauthOff(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, http.StatusNotFound, "", "auth mode oauth is off: TOOLROUTER_TOKEN_KEYS is unset")
}

// caller is the calling client and user of a /connections request; false
// (and a 400 written) when the request names no user.
func caller(w http.ResponseWriter, r *http.Request) (oauthconn.Who, bool) {
	u := access.UserFromContext(r.Context())
	if u == nil || u.Subject == "" {
		writeProblem(w, r, http.StatusBadRequest, "", "connections belong to a user: call with a JWT, or with X-Toolrouter-User from a client with may_assert_user")
		return oauthconn.Who{}, false
	}
	return oauthconn.Who{Client: access.FromContext(r.Context()).LabelName(), User: u.Subject}, true
}

// handleListConnections answers GET /connections (operation
// listConnections): the caller's connected backends, never a token.
func handleListConnections(c Connections) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c == nil {
			oauthOff(w, r)
			return
		}
		who, ok := caller(w, r)
		if !ok {
			return
		}
		list, err := c.Connections(r.Context(), who)
		if err != nil {
			writeProblem(w, r, http.StatusInternalServerError, "", "the connections could not be read")
			return
		}
		encode(w, r, http.StatusOK, map[string]any{"connections": list})
	}
}

// handleDeleteConnection answers DELETE /connections/{backend} (operation
// deleteConnection): deleted, and revoked where the server offers it.
func handleDeleteConnection(c Connections) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c == nil {
			oauthOff(w, r)
			return
		}
		who, ok := caller(w, r)
		if !ok {
			return
		}
		backend := chi.URLParam(r, "backend")
		found, err := c.Disconnect(r.Context(), who, backend)
		switch {
		case !found && err == nil:
			writeProblem(w, r, http.StatusNotFound, "", "no connection to "+backend+" for this user")
		case err != nil && !found:
			writeProblem(w, r, http.StatusInternalServerError, "", "the connection could not be deleted")
		case err != nil:
			// Deleted here; the server did not take the revocation.
			writeProblem(w, r, http.StatusBadGateway, "", "disconnected, but "+err.Error())
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}
}
