"""An OpenAI agent loop whose tools are toolrouterd's (README, "Quickstart"). Standard library only.

TOOLROUTER_URL   toolrouterd (default http://127.0.0.1:8080, `make run`); TOOLROUTER_KEY its key, if any
OPENAI_BASE_URL  the model's Chat Completions API (default https://api.openai.com/v1; `make run` prints its offline one)
OPENAI_API_KEY   its key; MODEL the model (default gpt-4o-mini)
"""
import json, os, sys, urllib.error, urllib.request

ROUTER = os.environ.get("TOOLROUTER_URL", "http://127.0.0.1:8080")
AUTH = {"Authorization": "Bearer " + os.environ["TOOLROUTER_KEY"]} if os.environ.get("TOOLROUTER_KEY") else {}
LLM = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")


def call(url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as e:  # the answer's body says why
        sys.exit(f"{url}: {e.code} {e.read().decode()}")


# The registry's tools, as OpenAI's API accepts them.
tools = [t["definition"] for t in call(f"{ROUTER}/schemas/openai", headers=AUTH)["tools"]]
messages = [{"role": "user", "content": sys.argv[1] if len(sys.argv) > 1 else "What is 2 + 3?"}]
for _ in range(10):
    completion = call(f"{LLM}/chat/completions",
                      {"model": os.environ.get("MODEL", "gpt-4o-mini"), "messages": messages, "tools": tools},
                      {"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"})
    turn = completion["choices"][0]["message"]
    messages.append(turn)
    if not turn.get("tool_calls"):
        print(turn["content"])
        break
    # toolrouterd runs every call of the turn and answers with the tool messages to append.
    routed = call(f"{ROUTER}/route/batch", {"plan_id": "quickstart", "message": turn}, AUTH)
    messages.extend(routed["messages"])
