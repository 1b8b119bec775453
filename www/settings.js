// The model settings of the chat demo: which provider and model the page's Agent talks to, and
// where the user's API key is kept.
//
// The provider, model and base URL are kept in localStorage. The API key is kept in
// sessionStorage (this tab, until it closes) unless the user ticks "remember on this device",
// then in localStorage. The key only ever goes into the Agent's model config: it is never
// written to the conversation store (IndexedDB).

/** The providers a user can pick, with the package's defaults (for placeholders). */
export const PROVIDERS = [
  { id: 'openai', name: 'OpenAI', model: 'gpt-4o-mini', models: ['gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4.1', 'gpt-4o'], baseUrl: 'https://api.openai.com/v1' },
  {
    id: 'anthropic',
    name: 'Anthropic',
    model: 'claude-3-5-haiku-latest',
    models: ['claude-3-5-haiku-latest', 'claude-sonnet-4-5', 'claude-haiku-4-5'],
    baseUrl: 'https://api.anthropic.com/v1',
  },
  {
    id: 'google',
    name: 'Google Gemini',
    model: 'gemini-2.5-flash',
    models: ['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-2.0-flash'],
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
  },
  { id: 'groq', name: 'Groq', model: 'llama-3.3-70b-versatile', models: ['llama-3.3-70b-versatile', 'llama-3.1-8b-instant'], baseUrl: 'https://api.groq.com/openai/v1' },
  { id: 'deepseek', name: 'DeepSeek', model: 'deepseek-chat', models: ['deepseek-chat', 'deepseek-reasoner'], baseUrl: 'https://api.deepseek.com/v1' },
  { id: 'mistral', name: 'Mistral', model: 'mistral-small-latest', models: ['mistral-small-latest', 'mistral-large-latest'], baseUrl: 'https://api.mistral.ai/v1' },
  { id: 'xai', name: 'xAI', model: 'grok-3-mini', models: ['grok-3-mini', 'grok-3'], baseUrl: 'https://api.x.ai/v1' },
  {
    id: 'openrouter',
    name: 'OpenRouter',
    model: 'openai/gpt-4o-mini',
    models: ['openai/gpt-4o-mini', 'anthropic/claude-3.5-haiku', 'meta-llama/llama-3.3-70b-instruct'],
    baseUrl: 'https://openrouter.ai/api/v1',
  },
  {
    id: 'togetherai',
    name: 'Together AI',
    model: 'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    models: ['meta-llama/Llama-3.3-70B-Instruct-Turbo'],
    baseUrl: 'https://api.together.xyz/v1',
  },
  { id: 'ollama', name: 'Ollama (on this computer)', model: 'llama3.2', models: ['llama3.2', 'qwen2.5', 'mistral'], baseUrl: 'http://127.0.0.1:11434/v1', noKey: true },
];

/** The choice that uses the model the server offers (the offline demo model, or its proxy). */
export const SERVER = 'server';

const SETTINGS_KEY = 'wasm-agent-demo:settings';
const API_KEY_PREFIX = 'wasm-agent-demo:api-key:';

export function providerInfo(id) {
  return PROVIDERS.find((p) => p.id === id) ?? null;
}

function storage(kind) {
  try {
    return kind === 'local' ? globalThis.localStorage : globalThis.sessionStorage;
  } catch {
    return null; // storage disabled
  }
}

/** `{ provider, model, baseUrl }` as saved (the server's model when nothing valid is saved). */
export function loadSettings() {
  const fallback = { provider: SERVER, model: '', baseUrl: '' };
  try {
    const saved = JSON.parse(storage('local')?.getItem(SETTINGS_KEY) ?? 'null');
    if (!saved || typeof saved !== 'object') return fallback;
    const provider = saved.provider === SERVER || providerInfo(saved.provider) ? saved.provider : SERVER;
    return {
      provider,
      model: typeof saved.model === 'string' ? saved.model : '',
      baseUrl: typeof saved.baseUrl === 'string' ? saved.baseUrl : '',
    };
  } catch {
    return fallback;
  }
}

/** Saves provider, model and base URL (never a key). */
export function saveSettings({ provider, model, baseUrl }) {
  try {
    storage('local')?.setItem(SETTINGS_KEY, JSON.stringify({ provider, model: model ?? '', baseUrl: baseUrl ?? '' }));
  } catch {
    // Storage disabled or full: the settings last until reload.
  }
}

/** The stored key of `provider`: `{ key, remembered }` (remembered = kept in localStorage). */
export function loadKey(provider) {
  const name = API_KEY_PREFIX + provider;
  try {
    const remembered = storage('local')?.getItem(name);
    if (remembered) return { key: remembered, remembered: true };
    return { key: storage('session')?.getItem(name) ?? '', remembered: false };
  } catch {
    return { key: '', remembered: false };
  }
}

/** Keeps `key` for `provider` in sessionStorage, or localStorage when `remember`; '' forgets it. */
export function storeKey(provider, key, remember) {
  const name = API_KEY_PREFIX + provider;
  const local = storage('local');
  const session = storage('session');
  try {
    local?.removeItem(name);
    session?.removeItem(name);
    if (key) (remember ? local : session)?.setItem(name, key);
  } catch {
    // Storage disabled: the key lasts while this page is open (it is in the Agent's config).
  }
}
