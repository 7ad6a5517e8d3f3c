package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ListPins implements store.Pins.
func (s *Store) ListPins(ctx context.Context) ([]*toolrouter.Pin, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT version, body FROM tool_pins ORDER BY server, tool`)
	if err != nil {
		return nil, fmt.Errorf("sqlite list pins: %w", err)
	}
	defer rows.Close()
	out := []*toolrouter.Pin{}
	for rows.Next() {
		var v int64
		var body string
		if err := rows.Scan(&v, &body); err != nil {
			return nil, fmt.Errorf("sqlite list pins: %w", err)
		}
		var p toolrouter.Pin
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			return nil, fmt.Errorf("sqlite list pins: %w", err)
		}
		p.Version = v
		out = append(out, &p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite list pins: %w", err)
	}
	return out, nil
}

// CreatePin implements store.Pins.
func (s *Store) CreatePin(ctx context.Context, p *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("sqlite create pin: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO tool_pins (server, tool, version, body) VALUES (?, ?, 1, ?)
		ON CONFLICT (server, tool) DO NOTHING`, p.Server, p.Tool, string(b))
	if err != nil {
		return false, fmt.Errorf("sqlite create pin: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite create pin: %w", err)
	}
	if n == 1 {
		p.Version = 1
	}
	return n == 1, nil
}

// UpdatePin implements store.Pins.
func (s *Store) UpdatePin(ctx context.Context, p *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("sqlite update pin: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE tool_pins SET version = version + 1, body = ?
		WHERE server = ? AND tool = ? AND version = ?`, string(b), p.Server, p.Tool, p.Version)
	if err != nil {
		return false, fmt.Errorf("sqlite update pin: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite update pin: %w", err)
	}
	if n == 1 {
		p.Version++
	}
	return n == 1, nil
}

// DeletePin implements store.Pins.
func (s *Store) DeletePin(ctx context.Context, p *toolrouter.Pin) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM tool_pins WHERE server = ? AND tool = ? AND version = ?`, p.Server, p.Tool, p.Version)
	if err != nil {
		return false, fmt.Errorf("sqlite delete pin: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite delete pin: %w", err)
	}
	return n == 1, nil
}
