package httpapi

// typedBody is a request body type the request checker sets from the body
// it decoded and checked (one decode per body): the handler and the rate
// limiter take it from the request's state.
type typedBody interface {
	// field is where the body's property name goes: a *string,
	// *map[string]any, *[]any or *any; nil for none.
	field(name string) any
	reset()
}

// setFromGeneric sets t from obj, a body decoded as a generic value and
// checked against the schema (whose types make the assertions exact).
func setFromGeneric(t typedBody, obj map[string]any) {
	for k, v := range obj {
		switch p := t.field(k).(type) {
		case *string:
			*p, _ = v.(string)
		case *map[string]any:
			*p, _ = v.(map[string]any)
		case *[]any:
			*p, _ = v.([]any)
		case *any:
			*p = v
		}
	}
}
