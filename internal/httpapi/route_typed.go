package httpapi

import (
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/format"
	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// typedRoute is a POST /route body of one of the common shapes, read by
// readTypedRoute straight into the call the router takes (issue 10: the
// generic decoding of the body cost a map per object and an allocation per
// string, a third of the handler's allocations).
type typedRoute struct {
	planID string
	meta   map[string]any
	call   format.Normalized
}

// readTypedRoute reads s into q when it is plainly a valid POST /route body
// (api/openapi.yaml, RouteRequest: plan_id, tool_call, provider_metadata,
// nothing else) whose tool_call is a Chat Completions call {"id", "type":
// "function", "function": {"name", "arguments"}} or an Anthropic tool_use
// block {"type": "tool_use", "id", "name", "input"}, with no key twice and
// a non-blank name: exactly the bodies that the request checker, Valid and
// format.Normalize pass, normalized as format.Normalize would. Anything
// else (any other shape, any error to word) is left to the generic path:
// ok is false, and q is then to be ignored.
func readTypedRoute(s string, q *typedRoute) bool {
	r := toolrouter.NewJSONReader(s)
	var (
		seen, tcSeen, fnSeen uint
		id, typ, name        string
		fnName, argsText     string
		args                 map[string]any // the arguments or input object
		argsIsText           bool
	)
	once := func(seen *uint, bit uint) bool {
		if *seen&bit != 0 {
			return false // a repeated key: the generic path's (last wins)
		}
		*seen |= bit
		return true
	}
	object := func() (map[string]any, bool) {
		if r.Null() {
			return nil, true
		}
		if r.Next() != '{' {
			return nil, false
		}
		v, ok := r.Value()
		m, _ := v.(map[string]any)
		return m, ok && m != nil
	}
	const (
		kPlan = 1 << iota
		kCall
		kMeta
		kID
		kType
		kName
		kFunction
		kInput
		kArguments
	)
	ok := r.Members(func(k string) bool {
		var ok bool
		switch k {
		case "plan_id":
			if !once(&seen, kPlan) {
				return false
			}
			q.planID, ok = r.String()
			return ok && planIDStringValid(q.planID)
		case "provider_metadata":
			if !once(&seen, kMeta) || r.Next() != '{' {
				return false
			}
			q.meta, ok = object()
			return ok
		case "tool_call":
			if !once(&seen, kCall) {
				return false
			}
			return r.Members(func(k string) bool {
				var ok bool
				switch k {
				case "id":
					if !once(&tcSeen, kID) {
						return false
					}
					id, ok = r.String()
				case "type":
					if !once(&tcSeen, kType) {
						return false
					}
					typ, ok = r.String()
				case "name":
					if !once(&tcSeen, kName) {
						return false
					}
					name, ok = r.String()
				case "input":
					if !once(&tcSeen, kInput) {
						return false
					}
					args, ok = object()
				case "function":
					if !once(&tcSeen, kFunction) {
						return false
					}
					return r.Members(func(k string) bool {
						var ok bool
						switch k {
						case "name":
							if !once(&fnSeen, kName) {
								return false
							}
							fnName, ok = r.String()
						case "arguments":
							if !once(&fnSeen, kArguments) {
								return false
							}
							if r.Next() == '"' {
								argsText, ok = r.String()
								argsIsText = true
							} else {
								args, ok = object()
							}
						}
						return ok
					})
				}
				return ok
			})
		}
		return false
	})
	if !ok || !r.End() || seen&(kPlan|kCall) != kPlan|kCall {
		return false
	}
	c := &q.call.Call
	*c = toolrouter.Call{ProviderCallID: id, HasProviderCallID: tcSeen&kID != 0}
	switch {
	case tcSeen&(kFunction|kName|kInput) == kFunction && (tcSeen&kType == 0 || typ == "function") &&
		fnSeen&kName != 0:
		// format.normalizeOpenAI: the nested Chat Completions call.
		c.Format, c.ToolName = toolrouter.FormatOpenAI, fnName
		if argsIsText {
			if args, ok = objectText(argsText); !ok {
				return false
			}
		}
	case tcSeen&(kFunction|kName|kInput) == kName|kInput && (tcSeen&kType == 0 || typ == "tool_use"):
		// format.normalizeAnthropic.
		c.Format, c.ToolName = toolrouter.FormatAnthropic, name
	default:
		return false
	}
	if strings.TrimSpace(c.ToolName) == "" {
		return false // the generic path words the error
	}
	if args == nil {
		args = map[string]any{} // absent or null: no arguments
	}
	c.Arguments = args
	return true
}

// objectText is format's reading of arguments sent as JSON text: blank or
// "null" is no arguments, anything else must be an object (ok is false for
// anything else, and for what DecodeJSON leaves to encoding/json).
func objectText(s string) (map[string]any, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, true
	}
	v, ok := toolrouter.DecodeJSON(s)
	if !ok {
		return nil, false
	}
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	return m, ok
}
