// A stand-in for a Durable Object's `state.storage` in Node tests of DurableObjectStore
// (tests/workerd runs the store in workerd itself).

/** The part of Durable Object storage the store uses, over a Map (list sorts keys, as DO does). */
export function fakeDurableStorage() {
  const m = new Map();
  const pick = (keys) => new Map(keys.filter((k) => m.has(k)).map((k) => [k, structuredClone(m.get(k))]));
  return {
    async get(k) {
      return Array.isArray(k) ? pick(k) : structuredClone(m.get(k));
    },
    async put(k, v) {
      if (typeof k === 'string') m.set(k, structuredClone(v));
      else for (const [key, val] of Object.entries(k)) m.set(key, structuredClone(val));
    },
    async delete(k) {
      for (const key of [k].flat()) m.delete(key);
      return true;
    },
    async list({ prefix = '', reverse = false, limit } = {}) {
      let keys = [...m.keys()].filter((k) => k.startsWith(prefix)).sort();
      if (reverse) keys.reverse();
      if (limit !== undefined) keys = keys.slice(0, limit);
      return pick(keys);
    },
    keys: () => [...m.keys()],
    raw: m,
  };
}
