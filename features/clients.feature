Feature: Clients see and call only their tools
  A registry can name clients, each with its own key and tool patterns.
  A client sees only the tools its patterns match, and a tool outside
  them is treated exactly like a tool that does not exist: not_found,
  never called, on every way a tool is reachable.

  Background:
    Given a registry with tools "billing/refund, billing/invoice, kb/search"
    And a client "billing" with key "billing-key" and tools "billing/*"
    And a client "support" with key "support-key" and tools "kb/*"

  Scenario: Each client lists only its tools
    When client "billing" lists the openai schemas
    Then the listed tools are "billing/refund, billing/invoice"
    When client "support" lists the openai schemas
    Then the listed tools are "kb/search"

  Scenario: A tool outside the scope is not found and not called
    When client "support" routes a call to "billing/refund"
    Then the route fails with category "not_found" and error "Tool 'billing/refund' not found"
    And the tool "billing/refund" was called 0 times
    When client "billing" routes a call to "billing/refund"
    Then the route succeeds
    And the tool "billing/refund" was called 1 times

  Scenario: A batch scopes every call, including provider aliases
    When client "support" routes a batch of calls to "kb/search, billing_refund, billing/invoice"
    Then the batch results are "success, not_found, not_found"
    And the tool "billing/invoice" was called 0 times

  Scenario: A run offers the model only the client's tools and refuses the others
    Given the model asks for "kb/search" and then "billing/refund" under their OpenAI names
    When client "support" starts a run
    Then the model was offered only "kb/search"
    And the run's tool calls are "success, not_found"
    And the tool "billing/refund" was called 0 times

  Scenario: MCP lists and calls only the client's tools
    When client "support" opens an MCP session
    Then the MCP tools are "kb/search"
    When client "support" calls MCP tool "billing/refund"
    Then the MCP result is an error with category "not_found"
    And the tool "billing/refund" was called 0 times

  Scenario: A key that matches no client is refused
    When a caller with key "nobody-key" lists the openai schemas
    Then the answer is 401 with a problem naming "Authorization"
