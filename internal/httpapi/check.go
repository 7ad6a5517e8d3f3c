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
// breaks SSE. It reads the body once (bounded), decodes it once as a
// generic value and checks that against the operation's schema;
// POST /route and /route/batch bodies it then sets into their typed
// request (routeBody, batchBody) from that value, the others' handlers
// decode the raw body (decode). A typed request's Valid checks only what the spec cannot say.
//
// It finds the operation by the route pattern chi matched rather than with
// a second router: two routers disagree on some paths (chi matches
// /runs/a%2Fb on the escaped path, kin-openapi's on the decoded one), and
// a request chi routed must never find "no operation".
type requestChecker struct {
	ops         map[string]*routers.Route              // "METHOD /pattern" → operation
	params      map[*routers.Route]openapi3.Parameters // each operation's parameters, path item's included
	bodies      map[*routers.Route]*opBody             // each operation's JSON request body
	maxBody     int64
	bodyTimeout time.Duration
}

// opBody is an operation's JSON request body: its schema and where the
// checker puts the decoded body (nil: the handler decodes the raw body
// itself).
type opBody struct {
	kin    *openapi3.Schema
	target func(*reqState) typedBody
}

// typedBodies are the operations whose body the request checker sets into
// the handler's typed request from the value it checked.
var typedBodies = map[string]func(*reqState) typedBody{
	"POST /route":       func(st *reqState) typedBody { return &st.route },
	"POST /route/batch": func(st *reqState) typedBody { return &st.batch },
}

func newRequestChecker(doc *openapi3.T, maxBody int64, bodyTimeout time.Duration) (*requestChecker, error) {
	ops := make(map[string]*routers.Route)
	params := make(map[*routers.Route]openapi3.Parameters)
	bodies := make(map[*routers.Route]*opBody)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			rt := &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op}
			ops[method+" "+path] = rt
			params[rt] = append(append(openapi3.Parameters(nil), item.Parameters...), op.Parameters...)
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				return nil, fmt.Errorf("OpenAPI spec: %s %s: request body without an application/json schema", method, path)
			}
			bodies[rt] = &opBody{kin: mt.Schema.Value, target: typedBodies[method+" "+path]}
		}
	}
	if len(ops) == 0 {
		return nil, errors.New("OpenAPI spec has no operations")
	}
	return &requestChecker{ops: ops, params: params, bodies: bodies, maxBody: maxBody, bodyTimeout: bodyTimeout}, nil
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
		ob := c.bodies[route]
		if ob == nil {
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
		if field, detail, ok := ob.check(raw, st); !ok {
			writeProblem(w, r, http.StatusBadRequest, field, detail)
			return
		}
		st.raw = raw
		next.ServeHTTP(w, r)
	})
}

// check checks raw, the body, against the operation's schema (kin-openapi's
// VisitJSON on the body decoded once as a generic value) and sets the typed
// request in st from that value when the operation has one; field and
// detail are the 400's when it does not pass.
func (ob *opBody) check(raw []byte, st *reqState) (field, detail string, ok bool) {
	obj, field, detail, ok := kinCheck(ob.kin, raw)
	if ok && ob.target != nil {
		setFromGeneric(ob.target(st), obj)
	}
	return field, detail, ok
}

// kinCheck is the body check as kin-openapi does it: the body decoded
// into a generic value, which openapi3's VisitJSON checks against schema.
func kinCheck(schema *openapi3.Schema, raw []byte) (obj map[string]any, field, detail string, ok bool) {
	obj, field, detail, ok = decodeObject(raw)
	if !ok {
		return nil, field, detail, false
	}
	if err := schema.VisitJSON(obj, openapi3.MultiErrors(), openapi3.VisitAsRequest()); err != nil {
		field, detail = describe(err)
		return nil, field, detail, false
	}
	return obj, "", "", true
}

// decodeObject decodes raw into a generic JSON object, or words why it
// cannot (the field is "body").
func decodeObject(raw []byte) (obj map[string]any, field, detail string, ok bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, "body", "body: " + jsonErrorText(err, raw), false
	}
	obj, ok = v.(map[string]any)
	if !ok {
		return nil, "body", "body: payload must be a dict (JSON object), got " + toolrouter.JSONKind(v), false
	}
	return obj, "", "", true
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
	var pp problemParts
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
					pp.add(name, name+": "+problemReason(problemOf(se)))
					return
				}
				pp.add(name, name+": "+re.Err.Error())
				return
			}
			pp.add(name, name+": "+re.Reason)
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			pp.addSchema(problemOf(se))
			return
		}
		pp.add("", err.Error())
	}
	walk(err)
	return pp.result()
}

// schemaProblem is what describe takes from a kin-openapi SchemaError: where
// (its JSON pointer), which keyword, its reason, the schema and the value's
// JSON kind.
type schemaProblem struct {
	path    []string
	keyword string
	reason  string
	schema  *openapi3.Schema
	kind    string
}

// problemOf is what describe needs of a kin-openapi schema error.
func problemOf(se *openapi3.SchemaError) schemaProblem {
	return schemaProblem{path: se.JSONPointer(), keyword: se.SchemaField, reason: se.Reason, schema: se.Schema, kind: toolrouter.JSONKind(se.Value)}
}

// problemParts is a problem response's field (the first problem's) and
// detail (each problem's words, at most five).
type problemParts struct {
	first string
	parts []string
}

func (pp *problemParts) add(f, d string) {
	if pp.first == "" {
		pp.first = f
	}
	pp.parts = append(pp.parts, d)
}

// addSchema adds a problem of the body's schema, naming its field.
func (pp *problemParts) addSchema(p schemaProblem) {
	ptr := p.path
	f := fieldPath(ptr)
	if p.keyword == "required" {
		if missing := missingProperty(p.reason); missing != "" {
			// kin-openapi puts the missing key at the end of the
			// pointer (it did not always).
			if len(ptr) == 0 || ptr[len(ptr)-1] != missing {
				f = joinField(f, missing)
			}
			pp.add(f, f+": is required")
			return
		}
	}
	if unk := unknownProperty(p.reason); unk != "" {
		f = joinField(f, unk)
		pp.add(f, f+": unknown field")
		return
	}
	if f == "" {
		f = "body"
	}
	pp.add(f, f+": "+problemReason(p))
}

func (pp *problemParts) result() (field, detail string) {
	parts := pp.parts
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return pp.first, strings.Join(parts, "; ")
}

func problemReason(p schemaProblem) string {
	if p.keyword == "type" && p.schema != nil && p.schema.Type != nil {
		want := ""
		switch {
		case p.schema.Type.Is("object"):
			want = "payload must be a dict (JSON object)"
		case p.schema.Type.Is("array"):
			want = "must be a list (JSON array)"
		case p.schema.Type.Is("integer"):
			want = "must be an integer"
		default:
			want = "must be a " + strings.Join(*p.schema.Type, " or ")
		}
		return want + ", got " + p.kind
	}
	if p.keyword == "pattern" && p.schema != nil {
		// The spec words its patterns' meaning in x-pattern-message.
		if msg, ok := p.schema.Extensions["x-pattern-message"].(string); ok {
			return msg
		}
	}
	if p.reason != "" {
		return p.reason
	}
	return "does not match the schema (" + p.keyword + ")"
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
