package toolrouter

import (
	"bytes"
	"encoding/json"
	"time"
)

// Pin is the reviewed definition of one tool of an MCP server (docs/trusting-tools.md
// "Pinned definitions"), shared by replicas through the store. Tool is the
// server's name for the tool; a Pin with Tool "" only marks the server as
// discovered (tools that appear later are new); Server "" holds the pins
// of the registry file's own tools. Digest and Definition are
// the accepted definition; both are empty for a new tool never accepted.
// Review is the latest review of a change: pending while the tool is
// quarantined, then decided (kept until the next change, for history).
// Version counts the updates of the pin, for compare-and-swap.
type Pin struct {
	Server     string          `json:"server"`
	Tool       string          `json:"tool"`
	Digest     string          `json:"digest,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	PinnedAt   time.Time       `json:"pinned_at"`
	Review     *PinReview      `json:"review,omitempty"`
	Version    int64           `json:"-"`
}

// PinReview is a change of a pinned definition awaiting, or having had,
// an approver's decision.
type PinReview struct {
	ID        string          `json:"id"`
	Status    ApprovalStatus  `json:"status"` // pending, approved or denied
	Old       json.RawMessage `json:"old,omitempty"`
	OldDigest string          `json:"old_digest,omitempty"`
	New       json.RawMessage `json:"new"`
	NewDigest string          `json:"new_digest"`
	ChangedAt time.Time       `json:"changed_at"`
	DecidedAt *time.Time      `json:"decided_at,omitempty"`
	DecidedBy string          `json:"decided_by,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	ToolName  string          `json:"tool_name"` // the canonical name when the change was seen
}

// DefinitionChange is what a definition review shows (api/openapi.yaml,
// Approval.definition): the server, the tool's name there, both
// definitions, their digests and a line diff of their indented JSON.
type DefinitionChange struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Old       json.RawMessage `json:"old"`
	OldSHA256 string          `json:"old_sha256"`
	New       json.RawMessage `json:"new"`
	NewSHA256 string          `json:"new_sha256"`
	Diff      string          `json:"diff"`
	// OnChange is the server's on_change: "quarantine" or "keep_old".
	OnChange string `json:"on_change"`
	// Invisible lists the invisible characters (U+XXXX) of the new
	// definition, which Diff shows escaped; none: omitted.
	Invisible []string `json:"invisible_characters,omitempty"`
}

// Approval kinds: a held call, or a changed tool definition.
const (
	ApprovalKindCall       = "call"
	ApprovalKindDefinition = "definition"
)

// CanonicalDefinition returns def as canonical JSON (object keys sorted,
// no insignificant space, numbers as written) and its SHA-256 in hex.
func CanonicalDefinition(def any) (json.RawMessage, string, error) {
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, "", err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, "", err
	}
	return b, sha256Hex(b), nil
}
