// An OpenAI agent loop whose tools are toolrouterd's (README, "Quickstart"). Node 20+, no
// dependencies, no build step: node quickstart.mjs "What is 2 + 3?"
//
// TOOLROUTER_URL   toolrouterd (default http://127.0.0.1:8080, `make run`); TOOLROUTER_KEY its key, if any
// OPENAI_BASE_URL  the model's Chat Completions API (default https://api.openai.com/v1; `make run` prints its offline one)
// OPENAI_API_KEY   its key; MODEL the model (default gpt-4o-mini)
const router = process.env.TOOLROUTER_URL ?? "http://127.0.0.1:8080";
const auth = process.env.TOOLROUTER_KEY ? { Authorization: `Bearer ${process.env.TOOLROUTER_KEY}` } : {};
const llm = process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1";

async function call(url, body, headers = {}) {
  const resp = await fetch(url, body === undefined ? { headers } : {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  if (!resp.ok) throw new Error(`${url}: ${resp.status} ${await resp.text()}`);
  return resp.json();
}

// The registry's tools, as OpenAI's API accepts them.
const tools = (await call(`${router}/schemas/openai`, undefined, auth)).tools.map((t) => t.definition);
const messages = [{ role: "user", content: process.argv[2] ?? "What is 2 + 3?" }];
for (let i = 0; i < 10; i++) {
  const completion = await call(`${llm}/chat/completions`,
    { model: process.env.MODEL ?? "gpt-4o-mini", messages, tools },
    { Authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ""}` });
  const turn = completion.choices[0].message;
  messages.push(turn);
  if (!turn.tool_calls?.length) {
    console.log(turn.content);
    break;
  }
  // toolrouterd runs every call of the turn and answers with the tool messages to append.
  const routed = await call(`${router}/route/batch`, { plan_id: "quickstart", message: turn }, auth);
  messages.push(...routed.messages);
}
