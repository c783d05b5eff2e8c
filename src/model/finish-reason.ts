/** Why a model stopped, in one vocabulary whatever the server's: 'stop', 'length', 'tool_calls', or the server's word. */

/**
 * Normalize a server's finish reason (OpenAI `finish_reason`, Ollama `done_reason`). 'length'
 * means the answer was cut at the output limit, so the caller can say that instead of blaming
 * the JSON it was cut in the middle of; it wins over tool calls for that reason.
 */
export function normalizeFinishReason(raw: unknown, hasToolCalls: boolean): string {
  const reason = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (reason === 'length' || reason === 'max_tokens') return 'length';
  if (reason === 'tool_calls' || reason === 'function_call') return 'tool_calls';
  // llama.cpp and Ollama say 'stop' even when they answered with tool calls
  if (reason === '' || reason === 'stop' || reason === 'eos') return hasToolCalls ? 'tool_calls' : 'stop';
  return reason;
}
