Feature: A whole assistant turn posted to /route/batch
  A client that got an assistant turn with tool calls from its provider posts the
  whole turn as "message"; toolrouterd routes its tool calls in order, skips its
  text and thinking, and answers with the messages to append, in that provider's
  shape (README, "A whole assistant turn").

  Scenario Outline: A <provider> turn is routed call by call and answered in its own shape
    Given a tool registry with an echo tool "test/echo"
    And a tool call router for plan "plan-turn-<provider>"
    And a <provider> assistant turn with text, thinking and 2 calls to "test/echo"
    When I route the assistant turn
    Then the batch should return 2 results
    And the batch results should have sequences 0 to 1
    And the answer should be <messages> message(s) answering every call in order

    Examples:
      | provider    | messages |
      | OpenAI Chat | 2        |
      | Anthropic   | 1        |
      | Gemini      | 1        |
      | Responses   | 2        |

  Scenario: A turn without tool calls is answered with no messages
    Given a tool registry with an echo tool "test/echo"
    And a tool call router for plan "plan-turn-text"
    And an assistant turn with text only
    When I route the assistant turn
    Then the batch should return 0 results
    And the answer should be 0 message(s) answering every call in order

  Scenario: A whole turn sent to /route is refused without burning a sequence
    Given a tool registry with an echo tool "test/echo"
    And a tool call router for plan "plan-turn-route"
    And an Anthropic assistant turn with text, thinking and 2 calls to "test/echo"
    When I try to route the assistant turn as one tool call
    Then a router ValueError should be raised containing "to POST /route/batch"
    And the router plan_id should be "plan-turn-route"
    And the router sequence should be 1

  Scenario: A batch with both tool_calls and message is refused
    Given a tool registry with an echo tool "test/echo"
    And a tool call router for plan "plan-turn-both"
    And an OpenAI Chat assistant turn with text, thinking and 2 calls to "test/echo"
    When I try to route the assistant turn together with tool_calls
    Then a router ValueError should be raised containing "tool_calls, message: send exactly one"

  Scenario: An empty provider call id is answered as sent
    Given a tool registry with an echo tool "test/echo"
    And a tool call router for plan "plan-turn-empty-id"
    And an OpenAI Chat assistant turn whose call ids are empty strings, calling "test/echo"
    When I route the assistant turn
    Then the answer should be 1 message(s) answering every call in order
