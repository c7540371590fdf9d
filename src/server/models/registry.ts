/**
 * Which registration holds each name, and every registration not yet gone. Queries only: the
 * lifecycle operations (lifecycle-operations.ts) are the only ones that add or remove entries.
 */
import type { Model } from './model';
import type { Registration } from './registration';
import { modelNotFound } from './model-names';

export interface ListedModel {
  name: string;
  url: string;
  model: Model;
  loadedAtStartup: boolean;
  failed: boolean;
}

export class ModelRegistry {
  /** The current registration of each name. */
  readonly #entries = new Map<string, Registration>();
  /** Every registration not yet gone, current or leaving: what holds memory. */
  readonly #live = new Set<Registration>();

  /** The name's current registration, in any phase. */
  current(name: string): Registration | undefined {
    return this.#entries.get(name);
  }

  /** Registrations that hold memory, leaving ones included. */
  get live(): ReadonlySet<Registration> {
    return this.#live;
  }

  /** `entry` takes its name over (a leaving registration of the name stays live until it is gone). */
  claim(entry: Registration): void {
    this.#entries.set(entry.name, entry);
    this.#live.add(entry);
  }

  /** Frees `entry`'s name if it still holds it (a name loaded again belongs to the new entry); returns whether it did. */
  release(entry: Registration): boolean {
    if (this.#entries.get(entry.name) !== entry) return false;
    this.#entries.delete(entry.name);
    return true;
  }

  /** `entry` is gone and holds no memory. */
  forget(entry: Registration): void {
    this.#live.delete(entry);
  }

  /** The model if registered (ready or failed); 404 otherwise. For describe. */
  get(name: string): Model {
    const e = this.#entries.get(name);
    if (!e?.model || !e.serving) throw modelNotFound(name);
    return e.model;
  }

  /** Whether `name` is registered: loaded, or loading (a POST /models in progress, or one answered 202). */
  registered(name: string): boolean {
    const e = this.#entries.get(name);
    return e !== undefined && (e.serving || e.phase === 'loading');
  }

  /** How many models serve (ready or failed): counted, not listed and sorted. */
  servingCount(): number {
    let n = 0;
    for (const e of this.#entries.values()) if (e.serving) n++;
    return n;
  }

  /** The name of the one serving model, or null when there are none or several (no sorting: /invocations asks per request). */
  onlyModel(): string | null {
    let only: string | null = null;
    for (const [name, e] of this.#entries) {
      if (!e.serving) continue;
      if (only !== null) return null;
      only = name;
    }
    return only;
  }

  /** Serving models (ready or failed), sorted by name. */
  list(): ListedModel[] {
    const out: ListedModel[] = [];
    for (const [name, e] of this.#entries) {
      if (e.model && e.serving)
        out.push({ name, url: e.url, model: e.model, loadedAtStartup: e.loadedAtStartup, failed: e.failed });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Memory the budget counts right now: serving models as measured, loading ones as reserved. */
  usedBytes(): number {
    let used = 0;
    for (const e of this.#live) used += e.heldBytes;
    return used;
  }
}
