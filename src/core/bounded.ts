/**
 * Per-process caches kept to a number of entries: a Map keeps insertion order, so the first key is
 * the entry set longest ago.
 */

/** Sets `key` as the newest entry of `map`, then drops the oldest while the map holds more than `max`. */
export function keepNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value as K);
}
