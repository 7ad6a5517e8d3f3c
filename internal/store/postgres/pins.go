package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

// ListPins implements store.Pins.
func (p *Store) ListPins(ctx context.Context) ([]*toolrouter.Pin, error) {
	rows, _ := p.pool.Query(ctx, `SELECT version, body FROM tool_pins ORDER BY server, tool`)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*toolrouter.Pin, error) {
		var v int64
		var body []byte
		if err := row.Scan(&v, &body); err != nil {
			return nil, err
		}
		var pin toolrouter.Pin
		if err := json.Unmarshal(body, &pin); err != nil {
			return nil, err
		}
		pin.Version = v
		return &pin, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres list pins: %w", err)
	}
	if out == nil {
		out = []*toolrouter.Pin{}
	}
	return out, nil
}

// CreatePin implements store.Pins.
func (p *Store) CreatePin(ctx context.Context, pin *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(pin)
	if err != nil {
		return false, fmt.Errorf("postgres create pin: %w", err)
	}
	tag, err := p.pool.Exec(ctx, `INSERT INTO tool_pins (server, tool, version, body) VALUES ($1, $2, 1, $3)
		ON CONFLICT (server, tool) DO NOTHING`, pin.Server, pin.Tool, string(b))
	if err != nil {
		return false, fmt.Errorf("postgres create pin: %w", err)
	}
	if tag.RowsAffected() == 1 {
		pin.Version = 1
	}
	return tag.RowsAffected() == 1, nil
}

// UpdatePin implements store.Pins.
func (p *Store) UpdatePin(ctx context.Context, pin *toolrouter.Pin) (bool, error) {
	b, err := json.Marshal(pin)
	if err != nil {
		return false, fmt.Errorf("postgres update pin: %w", err)
	}
	tag, err := p.pool.Exec(ctx, `UPDATE tool_pins SET version = version + 1, body = $1
		WHERE server = $2 AND tool = $3 AND version = $4`, string(b), pin.Server, pin.Tool, pin.Version)
	if err != nil {
		return false, fmt.Errorf("postgres update pin: %w", err)
	}
	if tag.RowsAffected() == 1 {
		pin.Version++
	}
	return tag.RowsAffected() == 1, nil
}

// DeletePin implements store.Pins.
func (p *Store) DeletePin(ctx context.Context, pin *toolrouter.Pin) (bool, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM tool_pins WHERE server = $1 AND tool = $2 AND version = $3`, pin.Server, pin.Tool, pin.Version)
	if err != nil {
		return false, fmt.Errorf("postgres delete pin: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
