package toolrouter

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// classRules are the seed's message rules, checked in order; the first rule
// with a matching substring wins.
var classRules = []struct {
	cat     ErrorCategory
	needles []string
}{
	{CategoryTimeout, []string{"timeout", "timed out", "deadline exceeded"}},
	{CategoryPermission, []string{"permission", "denied", "forbidden", "unauthorized", "not allowed"}},
	{CategoryNotFound, []string{"not found", "no such", "does not exist", "unknown tool"}},
	{CategoryResource, []string{"memory", "resource", "quota", "too large", "too many", "rate limit", "disk full", "no space", "unavailable", "connection refused", "exhausted"}},
	{CategorySchema, []string{"schema", "validation", "invalid argument", "missing required", "required property"}},
	{CategoryParse, []string{"parse", "json", "decode", "unmarshal", "malformed", "syntax"}},
}

// ClassifyError maps an error message to its category by the seed's rules:
// an empty message is unknown, a message matching no rule is execution.
func ClassifyError(msg string) ErrorCategory {
	if strings.TrimSpace(msg) == "" {
		return CategoryUnknown
	}
	m := strings.ToLower(msg)
	for _, r := range classRules {
		for _, n := range r.needles {
			if strings.Contains(m, n) {
				return r.cat
			}
		}
	}
	return CategoryExecution
}

// ClassifyStatus maps a tool's HTTP status to a category when the status
// alone decides it; ok is false for statuses the message must decide.
func ClassifyStatus(code int) (cat ErrorCategory, ok bool) {
	switch code {
	case 408, 504:
		return CategoryTimeout, true
	case 401, 403, 407:
		return CategoryPermission, true
	case 404, 410:
		return CategoryNotFound, true
	case 413, 429, 503, 507:
		return CategoryResource, true
	case 400, 422:
		return CategorySchema, true
	}
	return "", false
}

// ToolCallID is the stable id of the sequence-th call of a plan:
// "tc_" + the first 24 hex digits of sha256(planID + ":" + sequence).
func ToolCallID(planID string, sequence int64) (string, error) {
	if planID == "" {
		return "", Invalid("plan_id", "plan_id must be a non-empty string")
	}
	if sequence < 0 {
		return "", Invalid("sequence", "sequence must be >= 0, got %d", sequence)
	}
	// Written into buffers of the stack: one allocation, the id's.
	var in [128]byte
	b := append(in[:0], planID...)
	b = append(b, ':')
	b = strconv.AppendInt(b, sequence, 10)
	sum := sha256.Sum256(b)
	var id [3 + 24]byte
	copy(id[:], "tc_")
	hex.Encode(id[3:], sum[:12])
	return string(id[:]), nil
}

// MaxBatchCalls is the most tool calls one batch holds: POST /route/batch
// and a JSON-RPC batch on /mcp.
const MaxBatchCalls = 1024

// MaxPlanID is the longest plan_id, in characters.
const MaxPlanID = 256

// ValidPlanID reports whether s is a plan_id (api/openapi.yaml): 1 to
// MaxPlanID characters, none a control character (C0, DEL, C1) nor a line
// or paragraph separator (U+2028, U+2029: line breaks to JavaScript and to
// many log viewers), since a plan id reaches tools in HTTP headers and
// logs.
func ValidPlanID(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > MaxPlanID {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// ShortDigest is the first 24 hex digits of the SHA-256 of s: the digest in
// tool call ids, in the plan ids of /mcp sessions and in spans' session ids.
func ShortDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// CheckPlanID refuses a plan id that is not ValidPlanID, as EINVALID
// naming plan_id, before any sequence of it is taken.
func CheckPlanID(planID string) error {
	if !ValidPlanID(planID) {
		return Invalid("plan_id", "plan_id must be a string of 1 to %d characters without control characters", MaxPlanID)
	}
	return nil
}
