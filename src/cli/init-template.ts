/**
 * The commented keel.toml that `keel init --project` writes: every key of the config schema with what
 * it does and its default, all commented out, so the file loads as the defaults until a line is opened.
 *
 * A line `# key = value` shows a default (remove "# " to set it); a line `#   e.g. ...` shows an example
 * for a key without a default. test/e2e/init.test.ts opens every default line and checks the result
 * loads to exactly the defaults, and that every schema key appears here.
 */

export const PROJECT_TEMPLATE = `# keel.toml: keel's settings for this project (written by \`keel init --project\`).
#
# Every setting is commented out and shows its default: remove the leading "# " to set one.
# Highest wins: flags, KEEL_* variables, this file, your user config (\`keel init\`), the defaults.
# \`keel config show\` prints what is in effect and where each value came from.
#
# Keys marked [trust]: a value here that widens what your own config allows (another endpoint, shell without a
# sandbox, hooks, higher limits...) is ignored, with a warning, until you review this file and run
# \`keel trust\`. Narrowing always works at once. An unknown key is an error.

# --- the model (usually in your user config; set it here to pin one for this project) ---
# provider = "openai"                       # openai: Chat Completions (vLLM, llama.cpp, LM Studio); ollama: Ollama's native /api/chat; scripted: tests
# model = ""                                # the model name as the server knows it; "" means none yet
# base_url = "http://127.0.0.1:11434/v1"    # [trust] http://host:8000/v1 for OpenAI-compatible servers, http://host:11434 for ollama
# api_key_env = "OPENAI_API_KEY"            # [trust] the NAME of the variable holding the API key, never the key
#   e.g. context_window = 32768             # tokens the model takes in; default: asked of the server
#   e.g. max_output_tokens = 4096           # cap on one answer, sent with every request; default: 8192
#   e.g. temperature = 0.2                  # 0 to 2; default: the server's
#   e.g. script = "fixtures/script.json"    # the scripted provider's script (tests, offline demos)
#   e.g. profile = "fast"                   # use [profiles.fast] over these settings (see the end of the file)
#   e.g. store = "postgres://keel@db/keel"  # your own config or KEEL_STORE only, never a project's: the run queue and ledger on PostgreSQL; default: sqlite (KEEL_HOME/keel.db)
#   e.g. hub_project = "team"               # your own config only, never a project's: the hub project keel serve's Hub page shows
#   e.g. hub_audit_key_file = "/home/me/.keel-hub.key"  # your own config only, never a project's: the audit key several hubs share (a private file; KEEL_HUB_AUDIT_KEY_FILE wins)

# --- what a session may do ---
# permission = "ask"                        # [trust] mode when no verb picks one: ask | plan (read-only), edit, auto
# scope = ["."]                             # [trust] writable paths, relative to the repository root
# allow_shell = false                       # [trust] true: shell runs even where no sandbox is available
# allow_commands = []                       # [trust] commands run without keel's question, still sandboxed: ["npm test"]
# deny_commands = []                        # commands the gate always denies: ["git push"] (chat: /permissions)
#   e.g. approvals = "writes"              # ask before: writes | shell | all | never ([trust] to ask less); unset: a command outside the sandbox
# sandbox = "auto"                          # [trust] where shell runs: auto (bwrap if installed) | bwrap | docker | none
# sandbox_network = false                   # [trust] true: sandboxed commands may use the network
# sandbox_env = []                          # [trust] more environment variable NAMES passed into the sandbox
# auto_commit = false                       # [trust] true: commit the session's own files when it completes
# stop_on_violation = false                 # true: a denied path ends the run (SCOPE_VIOLATION) instead of telling the model
# loop_threshold = 3                        # [trust] the same tool call this many times ends the run (LOOP_DETECTED)
#   e.g. test_command = "npm test"          # how to run the tests; default: detected from the repository

# --- hooks [trust]: programs run around tool calls; none by default ---
#   e.g. [[hooks]]
#   e.g. event = "PreToolUse"               # PreToolUse | PostToolUse | UserPromptSubmit | SessionStart | Stop
#   e.g. matcher = "shell"                  # regex on the whole tool name; absent: every tool
#   e.g. command = ["./scripts/check-command"]  # an argv array, never a shell string; gets one JSON object on stdin
#   e.g. timeout_s = 10                     # exit 0 allows, exit 2 denies with stderr as the reason; else denies
#   e.g. approver = false                   # true: its allow lets the shell tool it names run without a sandbox

# --- MCP servers [trust]: their tools become mcp__<name>__<tool>; none by default ---
#   e.g. [[mcp_servers]]
#   e.g. name = "docs"                      # lowercase letters, digits, _ and -
#   e.g. command = ["node", "tools/docs-server.js"]  # stdio: an argv array, run in the sandbox (or url, not both)
#   e.g. url = "http://127.0.0.1:7000/mcp"  # Streamable HTTP instead of command
#   e.g. bearer_token_env = "DOCS_TOKEN"    # with url: the variable holding the bearer token
#   e.g. env = { DOCS_DIR = "docs" }        # more variables for a stdio server
#   e.g. read_only_tools = ["search"]       # effect read (offered in ask mode); ["*"]: all; the rest are exec
#   e.g. startup_timeout_s = 10             # listing its tools at session start; a server that misses it is skipped
#   e.g. tool_timeout_s = 60                # one call; a call past it is a tool error
#   e.g. sandbox = "none"                   # run it as you, unsandboxed (your own config only, never a project's)
# --- remote A2A agents [trust]: each becomes a tool a2a__NAME (effect exec, gated like shell); none by default ---
#   e.g. [[a2a_agents]]
#   e.g. name = "reviewer"                  # lower-case letters, digits, _ and -: the tool is a2a__reviewer
#   e.g. card_url = "http://127.0.0.1:7430/.well-known/agent-card.json"  # the agent card's URL
#   e.g. token_env = "REVIEWER_TOKEN"       # the NAME of the variable holding its bearer token; default: none sent
#   e.g. timeout_s = 300                    # how long one call waits for the agent's task to end

# --- other models [trust]; none by default ---
#   e.g. [[fallback_models]]                # tried in order when the model fails; each: model, provider?, base_url?, api_key_env?, context_window?
#   e.g. model = "qwen2.5-coder:7b"
#   e.g. [roles.review]                     # the reviewer for \`keel loop\`; the same keys as a fallback model
#   e.g. model = "qwen2.5-coder:32b"
#   e.g. [pricing."gpt-4.1"]                # [trust] USD per million tokens, so cost budgets can count
#   e.g. input_per_mtok = 2.0
#   e.g. output_per_mtok = 8.0
#   e.g. [[routing.tiers]]                  # keel fix sends each call to a tier by its difficulty; list them cheapest first
#   e.g. name = "small"                     # and provider?, base_url?, api_key_env?, context_window? (default: the top level's)
#   e.g. model = "qwen2.5-coder:7b"
#   e.g. gpu_second = 0.0004                # its price: input_per_mtok and output_per_mtok, or USD per second on your own GPU

# [budgets]                                 # [trust] per session; a run stops with BUDGET_EXCEEDED
# max_rounds = 40                           # model rounds
#   e.g. max_tokens = 200000                # tokens in and out; default: no limit
#   e.g. max_cost_usd = 1.0                 # needs [pricing]; default: no limit
#   e.g. max_wall_s = 900                   # wall-clock seconds; default: no limit
#   e.g. max_diff_lines = 500               # lines changed; default: no limit

# [sandbox_limits]                          # [trust] per sandboxed command
# cpu_s = 300                               # CPU seconds
# memory_mb = 4096                          # memory
# processes = 256                           # processes
# file_size_mb = 1024                       # largest file it may write
# output_kb = 1024                          # output kept from it

# [compaction]                              # older turns become a summary as the context fills
# threshold = 0.8                           # when a request would pass this share of the context window
# keep = 0.3                                # the share of the window kept verbatim

# [agents]                                  # [trust] subagents (spawn_agent)
# max_running = 4                           # how many run at once
# max_depth = 2                             # how deep they nest

# [graph]                                   # the code graph (keel graph)
# map_tokens = 1000                         # the repo map in a new session's system prompt; 0: none

# [memory]                                  # what earlier sessions left (keel memory)
# inject_tokens = 600                       # [trust] to raise: memory in a new session's system prompt; 0: none
#   e.g. embedding_model = "nomic-embed-text" # embeddings from the same server; default: the offline embedder

# [timeouts]                                # [trust] to raise
# connect_s = 10                            # connecting to the server
# first_token_s = 120                       # waiting for the first token
# idle_s = 60                               # silence in the middle of an answer

# [retries]                                 # model requests that fail for a reason worth retrying
# max = 3                                   # [trust] to raise: retries per request
# base_delay_ms = 500                       # first backoff
# max_delay_ms = 30000                      # longest backoff
# cooldown_s = 60                           # how long a failed model sits out of the fallback chain

# --- profiles: named sets of these settings; choose one with --profile NAME, KEEL_PROFILE or "profile" ---
#   e.g. [profiles.fast]
#   e.g. model = "qwen2.5-coder:7b"
`;
