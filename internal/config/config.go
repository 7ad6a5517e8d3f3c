// Package config reads toolrouterd's configuration from the environment.
package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
	"github.com/rs/zerolog"
)

// Prefix of every variable.
const Prefix = "TOOLROUTER"

// Config is the process configuration (CONTRACT §2). Field names map to
// TOOLROUTER_<SPLIT_WORDS>; no `envconfig` tags are used on purpose, since a
// tag makes envconfig also read the bare, unprefixed name.
type Config struct {
	Addr             string        `split_words:"true" default:":8080"`
	Registry         string        `split_words:"true"`
	Store            string        `split_words:"true" default:"sqlite://toolrouter.db"`
	APIKeys          []string      `split_words:"true"`
	LogLevel         string        `split_words:"true" default:"info"`
	LogFormat        string        `split_words:"true" default:"json"`
	MaxBodyBytes     int64         `split_words:"true" default:"4194304"`
	BatchConcurrency int           `split_words:"true" default:"16"`
	ShutdownTimeout  time.Duration `split_words:"true" default:"30s"`
	// IdempotencyTTL is how long an answered Idempotency-Key is replayed.
	IdempotencyTTL time.Duration `split_words:"true" default:"24h"`
	// RunHeartbeat is how often a running /runs run says it is alive; one
	// silent for three heartbeats is marked interrupted by any replica.
	RunHeartbeat time.Duration `split_words:"true" default:"5s"`
}

// Load reads and validates the configuration. Its error is one line naming
// the variable at fault.
func Load() (Config, error) {
	var c Config
	if err := envconfig.Process(Prefix, &c); err != nil {
		var pe *envconfig.ParseError
		if errors.As(err, &pe) {
			return c, fmt.Errorf("%s: %q is not a valid %s", pe.KeyName, pe.Value, typeWord(pe.TypeName))
		}
		return c, err
	}
	return c, c.Validate()
}

func typeWord(t string) string {
	switch t {
	case "int", "int64":
		return "integer"
	case "Duration":
		return "duration (e.g. 30s)"
	}
	return t
}

// Validate checks every value.
func (c *Config) Validate() error {
	keys := c.APIKeys[:0]
	for _, k := range c.APIKeys {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	c.APIKeys = keys
	switch {
	case strings.TrimSpace(c.Addr) == "":
		return errors.New("TOOLROUTER_ADDR: must not be empty (e.g. :8080 or 127.0.0.1:8080)")
	case !strings.Contains(c.Addr, ":"):
		return fmt.Errorf("TOOLROUTER_ADDR: %q is not host:port", c.Addr)
	case c.Store == "":
		return errors.New("TOOLROUTER_STORE: must not be empty (memory://, sqlite://PATH or postgres://…)")
	case !validStore(c.Store):
		return fmt.Errorf("TOOLROUTER_STORE: %q is not memory://, sqlite://PATH or postgres://…", c.Store)
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("TOOLROUTER_MAX_BODY_BYTES: %d is below the minimum of 1024", c.MaxBodyBytes)
	case c.BatchConcurrency < 1 || c.BatchConcurrency > 1024:
		return fmt.Errorf("TOOLROUTER_BATCH_CONCURRENCY: %d is outside 1..1024", c.BatchConcurrency)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("TOOLROUTER_SHUTDOWN_TIMEOUT: %s must be positive", c.ShutdownTimeout)
	case c.IdempotencyTTL <= 0:
		return fmt.Errorf("TOOLROUTER_IDEMPOTENCY_TTL: %s must be positive", c.IdempotencyTTL)
	case c.RunHeartbeat < 100*time.Millisecond:
		return fmt.Errorf("TOOLROUTER_RUN_HEARTBEAT: %s is below the minimum of 100ms", c.RunHeartbeat)
	case c.LogFormat != "json" && c.LogFormat != "console":
		return fmt.Errorf("TOOLROUTER_LOG_FORMAT: %q is not json or console", c.LogFormat)
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		return fmt.Errorf("TOOLROUTER_LOG_LEVEL: %q is not one of trace, debug, info, warn, error, fatal, panic, disabled", c.LogLevel)
	}
	return nil
}

func validStore(s string) bool {
	for _, p := range []string{"memory://", "sqlite://", "postgres://", "postgresql://"} {
		if strings.HasPrefix(s, p) {
			return p != "sqlite://" || len(s) > len(p)
		}
	}
	return false
}
