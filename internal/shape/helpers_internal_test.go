package shape

import (
	"encoding/json"

	"github.com/toolrouterd/toolrouterd/internal/toolrouter"
)

func jsonString(s string) (json.RawMessage, error) { return json.Marshal(s) }

func budgetTokens(n int) toolrouter.OutputBudget { return toolrouter.OutputBudget{Tokens: n} }
