package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// requestChecker enforces the OpenAPI spec on requests. It is ours rather
// than kin-openapi's ready-made middleware, which buffers responses and
// breaks SSE. It reads the body once (bounded), validates it against the
// operation's schema and hands it to the handler through the context, so
// no handler reads the body again: handlers decode it into their typed
// request (decode), whose Valid checks only what the spec cannot say.
//
// It finds the operation by the route pattern chi matched rather than with
// a second router: two routers disagree on some paths (chi matches
// /runs/a%2Fb on the escaped path, kin-openapi's on the decoded one), and
// a request chi routed must never find "no operation".
type requestChecker struct {
	ops         map[string]*routers.Route              // "METHOD /pattern" → operation
	params      map[*routers.Route]openapi3.Parameters // each operation's parameters, path item's included
	maxBody     int64
	bodyTimeout time.Duration
}

func newRequestChecker(doc *openapi3.T, maxBody int64, bodyTimeout time.Duration) (*requestChecker, error) {
	ops := make(map[string]*routers.Route)
	params := make(map[*routers.Route]openapi3.Parameters)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			rt := &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}
			ops[method+" "+path] = rt
			params[rt] = append(append(openapi3.Parameters(nil), item.Parameters...), op.Parameters...)
		}
	}
	if len(ops) == 0 {
		return nil, errors.New("OpenAPI spec has no operations")
	}
	return &requestChecker{ops: ops, params: params, maxBody: maxBody, bodyTimeout: bodyTimeout}, nil
}

// operation returns the spec's operation for the route chi matched (HEAD
// is checked as GET) and the request's path parameters, unescaped.
func (c *requestChecker) operation(r *http.Request) (*routers.Route, map[string]string, error) {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return nil, nil, errors.New("no chi route context")
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	pattern := rc.RoutePattern()
	route, ok := c.ops[method+" "+pattern]
	if !ok {
		return nil, nil, fmt.Errorf("no operation %s %s", method, pattern)
	}
	if len(rc.URLParams.Keys) == 0 {
		return route, nil, nil
	}
	params := make(map[string]string, len(rc.URLParams.Keys))
	for i, k := range rc.URLParams.Keys {
		params[k] = unescapeParam(r, rc.URLParams.Values[i])
	}
	return route, params, nil
}

// paramsToCheck reports whether kin-openapi's parameter check could say
// anything about r: the operation declares a required parameter, or one
// that r carries. Otherwise (POST /route without Idempotency-Key) the check
// is skipped, as it could only pass: security is not checked there
// (NoopAuthenticationFunc; authenticate does it) and undeclared query
// parameters are not refused.
func (c *requestChecker) paramsToCheck(r *http.Request, route *routers.Route) bool {
	for _, ref := range c.params[route] {
		p := ref.Value
		if p == nil || p.Required {
			return true
		}
		switch p.In {
		case openapi3.ParameterInHeader:
			if _, ok := r.Header[http.CanonicalHeaderKey(p.Name)]; ok {
				return true
			}
		case openapi3.ParameterInQuery:
			if r.URL.RawQuery != "" {
				return true
			}
		default: // path (always required), cookie
			return true
		}
	}
	return false
}

// pathParam returns a path parameter, unescaped (chi matches on the escaped
// path when the request has one, so /runs/a%2Fb gives the id "a/b").
func pathParam(r *http.Request, name string) string {
	return unescapeParam(r, chi.URLParam(r, name))
}

func unescapeParam(r *http.Request, v string) string {
	if r.URL.RawPath == "" {
		return v // chi matched on the decoded path
	}
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// body returns the request body the checker decoded, as it checked it
// against the spec (the rate limiter counts a batch's calls in it).
func body(r *http.Request) map[string]any {
	if st := stateOf(r); st != nil {
		return st.obj
	}
	return nil
}

// rawBody returns the request body bytes the checker read, which handlers
// decode into their typed request (decode).
func rawBody(r *http.Request) []byte {
	if st := stateOf(r); st != nil {
		return st.raw
	}
	return nil
}

func (c *requestChecker) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, params, err := c.operation(r)
		if err != nil {
			// chi matched a route the spec lacks: a bug, not the client's
			// fault (TestEveryRouteIsInTheSpec guards against it).
			writeError(w, r, fmt.Errorf("OpenAPI spec lacks a route the server has: %w", err))
			return
		}
		if c.paramsToCheck(r, route) {
			// Parameters and headers only: the body is read once, bounded,
			// below (kin-openapi's security check would read it unbounded).
			head := r.Clone(r.Context())
			head.Body = http.NoBody
			in := &openapi3filter.RequestValidationInput{
				Request:    head,
				PathParams: params,
				Route:      route,
				Options: &openapi3filter.Options{
					ExcludeRequestBody: true,
					MultiError:         true,
					AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
				},
			}
			if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
				field, detail := describe(err)
				writeProblem(w, r, http.StatusBadRequest, field, detail)
				return
			}
		}
		rb := route.Operation.RequestBody
		if rb == nil || rb.Value == nil {
			next.ServeHTTP(w, r)
			return
		}
		if !isJSON(r.Header.Get("Content-Type")) {
			writeProblem(w, r, http.StatusUnsupportedMediaType, "Content-Type", "Content-Type: must be application/json")
			return
		}
		if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(strings.TrimSpace(ce), "identity") {
			// Read as JSON, a gzip body would be a puzzling "not valid JSON".
			writeProblem(w, r, http.StatusUnsupportedMediaType, "Content-Encoding", "Content-Encoding: "+strconv.Quote(ce)+" is not supported; send the body uncompressed")
			return
		}
		// A body must arrive in bodyReadTimeout: a client trickling it
		// would otherwise hold its connection and goroutine for ever (the
		// server has no ReadTimeout, which would cut streams short).
		setReadDeadline(w, time.Now().Add(c.bodyTimeout))
		raw, err := c.readBody(w, r)
		setReadDeadline(w, time.Time{})
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeProblem(w, r, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body: larger than the limit of %d bytes (TOOLROUTER_MAX_BODY_BYTES)", c.maxBody))
				return
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				w.Header().Set("Connection", "close")
				writeProblem(w, r, http.StatusRequestTimeout, "body", fmt.Sprintf("body: not received within %s", c.bodyTimeout))
				return
			}
			writeProblem(w, r, http.StatusBadRequest, "body", "body: could not be read: "+err.Error())
			return
		}
		st := stateOf(r)
		if st == nil {
			writeError(w, r, errors.New("request checker: no request state (requestID must come first)"))
			return
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			writeProblem(w, r, http.StatusBadRequest, "body", "body: "+jsonErrorText(err, raw))
			return
		}
		obj, ok := v.(map[string]any)
		if !ok {
			writeProblem(w, r, http.StatusBadRequest, "body", "body: payload must be a dict (JSON object), got "+toolrouter.JSONKind(v))
			return
		}
		schema := rb.Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(obj, openapi3.MultiErrors(), openapi3.VisitAsRequest()); err != nil {
			field, detail := describe(err)
			writeProblem(w, r, http.StatusBadRequest, field, detail)
			return
		}
		st.raw, st.obj = raw, obj
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether a Content-Type is application/json (with or
// without parameters).
func isJSON(ct string) bool {
	if strings.EqualFold(ct, "application/json") { // the common case, without parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// readBody reads r's body, at most maxBody bytes (a longer body is a
// *http.MaxBytesError). A body of declared length within the limit is read
// into a buffer of its size (net/http's reader ends it there).
func (c *requestChecker) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= c.maxBody && n <= 1<<20 {
		raw := make([]byte, n)
		_, err := io.ReadFull(r.Body, raw)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = io.ErrUnexpectedEOF
		}
		return raw, err
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, c.maxBody))
}

// describe turns a kin-openapi validation error into the field it is about
// and a one-line detail naming it.
func describe(err error) (field, detail string) {
	var parts []string
	var first string
	add := func(f, d string) {
		if first == "" {
			first = f
		}
		parts = append(parts, d)
	}
	var walk func(error)
	walk = func(err error) {
		if me, ok := err.(openapi3.MultiError); ok {
			for _, e := range me {
				walk(e)
			}
			return
		}
		// A parameter error wraps schema errors of its own; name the
		// parameter before descending.
		var re *openapi3filter.RequestError
		if errors.As(err, &re) && re.Parameter != nil {
			name := re.Parameter.Name
			if re.Err != nil {
				var se *openapi3.SchemaError
				if errors.As(re.Err, &se) {
					add(name, name+": "+schemaReason(se))
					return
				}
				add(name, name+": "+re.Err.Error())
				return
			}
			add(name, name+": "+re.Reason)
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			ptr := se.JSONPointer()
			f := fieldPath(ptr)
			if se.SchemaField == "required" {
				if missing := missingProperty(se.Reason); missing != "" {
					// kin-openapi puts the missing key at the end of the
					// pointer (it did not always).
					if len(ptr) == 0 || ptr[len(ptr)-1] != missing {
						f = joinField(f, missing)
					}
					add(f, f+": is required")
					return
				}
			}
			if unk := unknownProperty(se.Reason); unk != "" {
				f = joinField(f, unk)
				add(f, f+": unknown field")
				return
			}
			if f == "" {
				f = "body"
			}
			add(f, f+": "+schemaReason(se))
			return
		}
		add("", err.Error())
	}
	walk(err)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return first, strings.Join(parts, "; ")
}

func schemaReason(se *openapi3.SchemaError) string {
	if se.SchemaField == "type" && se.Schema != nil && se.Schema.Type != nil {
		want := ""
		switch {
		case se.Schema.Type.Is("object"):
			want = "payload must be a dict (JSON object)"
		case se.Schema.Type.Is("array"):
			want = "must be a list (JSON array)"
		case se.Schema.Type.Is("integer"):
			want = "must be an integer"
		default:
			want = "must be a " + strings.Join(*se.Schema.Type, " or ")
		}
		return want + ", got " + toolrouter.JSONKind(se.Value)
	}
	if se.SchemaField == "pattern" && se.Schema != nil {
		// The spec words its patterns' meaning in x-pattern-message.
		if msg, ok := se.Schema.Extensions["x-pattern-message"].(string); ok {
			return msg
		}
	}
	if se.Reason != "" {
		return se.Reason
	}
	return "does not match the schema (" + se.SchemaField + ")"
}

func fieldPath(ptr []string) string {
	var b strings.Builder
	for _, p := range ptr {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func joinField(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// missingProperty extracts NAME from kin-openapi's `property "NAME" is missing`.
func missingProperty(reason string) string {
	if !strings.HasSuffix(reason, "is missing") {
		return ""
	}
	return quoted(reason)
}

// unknownProperty extracts NAME from `property "NAME" is unsupported`.
func unknownProperty(reason string) string {
	if !strings.HasPrefix(reason, "property ") || !strings.HasSuffix(reason, " is unsupported") {
		return ""
	}
	return quoted(reason)
}

// quoted extracts the Go-quoted string (%q) that s contains.
func quoted(s string) string {
	i := strings.IndexByte(s, '"')
	if i < 0 {
		return ""
	}
	if name, err := strconv.QuotedPrefix(s[i:]); err == nil {
		if u, err := strconv.Unquote(name); err == nil {
			return u
		}
	}
	name, _, _ := strings.Cut(s[i+1:], `"`)
	return name
}

// jsonErrorText describes a decoding error with its byte offset.
func jsonErrorText(err error, raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "not valid JSON: empty body"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON: %s (at byte %d)", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && strings.HasPrefix(te.Value, "number") {
		// Valid JSON, but beyond float64 (1e400).
		return fmt.Sprintf("%s is out of range (at byte %d)", te.Value, te.Offset)
	}
	return "not valid JSON: " + err.Error()
}
