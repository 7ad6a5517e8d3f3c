package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// Clients are the clients in force: those of the registry file plus one
// per key of TOOLROUTER_API_KEYS.
type Clients struct {
	keys      []keyed // every client with a key, compared in constant time
	bySubject map[string]*Client
	byName    map[string]*Client
	names     []string
	// Warnings are problems that do not stop the service, for the log.
	Warnings []string
}

type keyed struct {
	digest [sha256.Size]byte
	client *Client
}

// NewClients builds the clients of a registry's clients section and of
// apiKeys (TOOLROUTER_API_KEYS): key i becomes the client "key-i" with
// every tool, every model and no admin rights. A registry client with the same key as
// an API key wins (one key is one client), with a warning.
func NewClients(apiKeys []string, reg []toolrouter.ClientSpec) *Clients {
	cs := &Clients{bySubject: map[string]*Client{}, byName: map[string]*Client{}}
	taken := map[[sha256.Size]byte]string{}
	for _, rc := range reg {
		c := &Client{
			Name: rc.Name, Admin: rc.Admin, Approver: rc.Approver, Rate: rc.RateLimit, ModelTurns: rc.ModelTurns,
			tools: NewScope(rc.Tools), approval: NewScope(rc.Approval), servers: rc.VirtualServers,
			models: NewScope(rc.Models), // none: no model use unless granted
		}
		if rc.VirtualServers != nil && rc.Tools == nil {
			// Its virtual servers are its scope.
			c.tools = NewScope([]string{"*"})
		}
		cs.names = append(cs.names, c.Name)
		cs.byName[c.Name] = c
		if rc.KeySHA256 != nil {
			var d [sha256.Size]byte
			copy(d[:], rc.KeySHA256)
			cs.keys = append(cs.keys, keyed{d, c})
			taken[d] = c.Name
		}
		if rc.JWTSubject != "" {
			cs.bySubject[rc.JWTSubject] = c
		}
	}
	for i, k := range apiKeys {
		name := fmt.Sprintf("key-%d", i+1)
		d := sha256.Sum256([]byte(k))
		if other, dup := taken[d]; dup {
			cs.Warnings = append(cs.Warnings, fmt.Sprintf("TOOLROUTER_API_KEYS: key %d is also the key of client %q; it is that client", i+1, other))
			continue
		}
		taken[d] = name
		c := &Client{Name: name, tools: NewScope([]string{"*"}), models: NewScope([]string{"*"})}
		cs.names = append(cs.names, name)
		cs.byName[name] = c
		cs.keys = append(cs.keys, keyed{d, c})
	}
	return cs
}

// Names are the names of every client, for metric labels.
func (cs *Clients) Names() []string { return cs.names }

// Open reports whether there is no client at all: the service takes
// requests without credentials.
func (cs *Clients) Open() bool { return len(cs.names) == 0 }

// ByKey finds the client of a bearer key. It compares the key's SHA-256
// with every client's in constant time, so neither the answer's timing nor
// the order of clients tells anything about the keys.
func (cs *Clients) ByKey(key string) *Client {
	d := sha256.Sum256([]byte(strings.TrimSpace(key)))
	var found *Client
	for _, k := range cs.keys {
		if subtle.ConstantTimeCompare(d[:], k.digest[:]) == 1 {
			found = k.client
		}
	}
	return found
}

// BySubject finds the client of a JWT subject.
func (cs *Clients) BySubject(sub string) *Client { return cs.bySubject[sub] }

// ByName finds a client by its name (nil when there is none): a paused
// run resumes as the client that started it.
func (cs *Clients) ByName(name string) *Client { return cs.byName[name] }
