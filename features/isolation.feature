Feature: Clients cannot see or influence each other's data
  Each client has its own plan sequences and tool_call ids, stored results,
  runs, Idempotency-Key replays and MCP sessions (docs/security.md "Clients"). Admin
  clients see every client's runs and read the audit trail.

  Background:
    Given a registry with tools "billing/refund, kb/search"
    And a client "billing" with key "billing-key" and tools "billing/*"
    And a client "support" with key "support-key" and tools "kb/*"
    And an admin client "auditor" with key "auditor-key" and tools "*"

  Scenario: Two clients using one plan_id keep separate sequences
    When client "billing" routes a call to "billing/refund" under plan "shared"
    Then the result is sequence 0 of plan "shared"
    When client "billing" routes a call to "billing/refund" under plan "shared"
    Then the result is sequence 1 of plan "shared"
    When client "support" routes a call to "kb/search" under plan "shared"
    Then the result is sequence 0 of plan "shared"

  Scenario: Another client's run is not found, and not listed
    Given the model answers "done"
    When client "billing" starts a run under plan "shared"
    Then the answer status is 200
    When client "support" reads that run
    Then the answer status is 404
    When client "support" lists the runs of plan "shared"
    Then the run list has 0 runs
    When client "billing" lists the runs of plan "shared"
    Then the run list has 1 runs
    When client "auditor" reads that run
    Then the answer status is 200
    When client "auditor" lists the runs of plan "shared"
    Then the run list has 1 runs

  Scenario: An Idempotency-Key replays only for the client that used it
    When client "billing" routes a call to "billing/refund" with Idempotency-Key "k-1"
    And client "billing" routes a call to "billing/refund" with Idempotency-Key "k-1"
    Then the answer was replayed
    And the tool "billing/refund" was called 1 times
    When client "auditor" routes a call to "billing/refund" with Idempotency-Key "k-1"
    Then the answer was not replayed
    And the tool "billing/refund" was called 2 times

  Scenario: An MCP session belongs to the client that opened it
    When client "support" opens an MCP session
    And client "billing" lists tools on that MCP session
    Then the answer status is 404
    When client "billing" deletes that MCP session
    Then the answer status is 404
    When client "support" calls MCP tool "kb/search"
    Then the MCP result is a success

  Scenario: The audit trail records every attempt and only admins read it
    When client "support" routes a call to "billing/refund" under plan "p"
    And client "billing" routes a call to "billing/refund" under plan "p"
    And client "auditor" reads the audit trail of tool "billing/refund"
    Then the answer status is 200
    And the audit records are "billing success, support denied"
    When client "billing" reads the audit trail of tool "billing/refund"
    Then the answer status is 403
