package mcpserver

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestSealedTaskIDs(t *testing.T) {
	key := []byte("the state key of every replica on the store")
	want := relayedTask{Server: "billing", Tool: "export", ID: "backend-task-7", Session: "sess-1", Client: "alice", User: "u-1", Plan: "p"}
	id, err := sealTask(key, want)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, sealedTaskPrefix) || !isRelayedTask(id) {
		t.Fatalf("sealed id %q lacks its prefix", id)
	}
	for _, secret := range []string{"backend-task-7", "billing", "alice", "sess-1"} {
		if strings.Contains(id, secret) || strings.Contains(id, base64.RawURLEncoding.EncodeToString([]byte(secret))) {
			t.Fatalf("sealed id %q shows %q", id, secret)
		}
	}
	if again, _ := sealTask(key, want); again == id {
		t.Fatal("two seals of one task are the same id: the nonce is not fresh")
	}
	got, err := openTask(key, id)
	if err != nil || got != want {
		t.Fatalf("openTask = %+v, %v; want %+v", got, err, want)
	}

	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, sealedTaskPrefix))
	for name, bad := range map[string]string{
		"one bit flipped": func() string {
			b := append([]byte(nil), raw...)
			b[len(b)/2] ^= 1
			return sealedTaskPrefix + base64.RawURLEncoding.EncodeToString(b)
		}(),
		"truncated":          id[:len(id)-4],
		"no prefix":          strings.TrimPrefix(id, sealedTaskPrefix),
		"own task id":        "task_0123456789abcdef",
		"not base64":         sealedTaskPrefix + "!!!",
		"shorter than nonce": sealedTaskPrefix + "AAAA",
		"empty after prefix": sealedTaskPrefix,
		"another prefix":     "trt0." + strings.TrimPrefix(id, sealedTaskPrefix),
		"another key's":      func() string { s, _ := sealTask([]byte("another store's key"), want); return s }(),
	} {
		if _, err := openTask(key, bad); !errors.Is(err, errNotSealed) {
			t.Errorf("%s: openTask = %v, want errNotSealed", name, err)
		}
	}
	// An id sealed without the fields that route it is refused too.
	for _, partial := range []relayedTask{{Tool: "t", ID: "i"}, {Server: "s", ID: "i"}, {Server: "s", Tool: "t"}} {
		s, _ := sealTask(key, partial)
		if _, err := openTask(key, s); !errors.Is(err, errNotSealed) {
			t.Errorf("%+v: openTask = %v, want errNotSealed", partial, err)
		}
	}
}
