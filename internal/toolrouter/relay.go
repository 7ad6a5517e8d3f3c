package toolrouter

import "encoding/json"

// Relay receives what a backend sends about a call while the call runs, so
// that the caller can pass it on: the /mcp endpoint forwards an MCP
// backend's notifications/progress and notifications/message to the MCP
// client that made the call (docs/mcp.md "MCP both ways"). Either func may be nil.
//
// It also carries what an /mcp caller on protocol 2026-07-28 sends along
// for the backend (docs/mcp.md "Elicitation through the gateway (multi round-trip
// requests)"); each is
// empty when the caller sent none.
type Relay struct {
	// Progress receives a progress notification (total 0: unknown).
	Progress func(progress, total float64, message string)
	// Log receives a log message: its level, logger ("" when none) and
	// data as the backend sent them.
	Log func(level, logger string, data json.RawMessage)
	// ClientCapabilities are the caller's _meta clientCapabilities, which
	// tell a backend what input (elicitation, sampling, roots) it may ask
	// the caller for.
	ClientCapabilities json.RawMessage
	// InputResponses and RequestState retry a call the backend answered
	// with an input_required result: the caller's answers to its
	// inputRequests, and the backend's own requestState.
	InputResponses json.RawMessage
	RequestState   string
}

// FilterReports is progress and relay passing what a backend reports while
// a call runs through text (progress messages) and data (log data): how
// redaction and credential scrubbing reach the reports. Either may be nil.
func FilterReports(progress func(progress, total float64, message string), relay *Relay, text func(string) string, data func(json.RawMessage) json.RawMessage) (func(progress, total float64, message string), *Relay) {
	wrap := func(p func(float64, float64, string)) func(float64, float64, string) {
		if p == nil {
			return nil
		}
		return func(progress, total float64, message string) { p(progress, total, text(message)) }
	}
	progress = wrap(progress)
	if relay == nil {
		return progress, nil
	}
	cp := *relay
	cp.Progress = wrap(relay.Progress)
	if l := relay.Log; l != nil {
		cp.Log = func(level, logger string, raw json.RawMessage) { l(level, logger, data(raw)) }
	}
	return progress, &cp
}
