/**
 * A set of strings kept in code-unit order, with the position of each: add, delete and the k-th
 * member in O(log n) expected (a treap whose nodes count their subtree). What a page of a sorted
 * listing needs without sorting everything for every page.
 */
interface Node {
  key: string;
  /** Heap order on random priorities keeps the tree balanced in expectation. */
  priority: number;
  size: number;
  left: Node | null;
  right: Node | null;
}

const sizeOf = (n: Node | null): number => (n === null ? 0 : n.size);

function resize(n: Node): Node {
  n.size = 1 + sizeOf(n.left) + sizeOf(n.right);
  return n;
}

/** Joins two trees whose keys are all below / all above each other. */
function merge(a: Node | null, b: Node | null): Node | null {
  if (a === null) return b;
  if (b === null) return a;
  if (a.priority > b.priority) {
    a.right = merge(a.right, b);
    return resize(a);
  }
  b.left = merge(a, b.left);
  return resize(b);
}

/** Splits into the keys below `key` and those at or above it. */
function split(n: Node | null, key: string): [Node | null, Node | null] {
  if (n === null) return [null, null];
  if (n.key < key) {
    const [l, r] = split(n.right, key);
    n.right = l;
    return [resize(n), r];
  }
  const [l, r] = split(n.left, key);
  n.left = r;
  return [l, resize(n)];
}

export class OrderedSet {
  #root: Node | null = null;
  readonly #members = new Set<string>();

  get size(): number {
    return this.#members.size;
  }

  has(key: string): boolean {
    return this.#members.has(key);
  }

  add(key: string): boolean {
    if (this.#members.has(key)) return false;
    this.#members.add(key);
    const [l, r] = split(this.#root, key);
    const node: Node = { key, priority: Math.random(), size: 1, left: null, right: null };
    this.#root = merge(merge(l, node), r);
    return true;
  }

  delete(key: string): boolean {
    if (!this.#members.delete(key)) return false;
    this.#root = this.#remove(this.#root, key);
    return true;
  }

  #remove(n: Node | null, key: string): Node | null {
    if (n === null) return null;
    if (n.key === key) return merge(n.left, n.right);
    if (key < n.key) n.left = this.#remove(n.left, key);
    else n.right = this.#remove(n.right, key);
    return resize(n);
  }

  /** Up to `count` members in order from position `start` (0-based): O(log n + count). */
  slice(start: number, count: number): string[] {
    const out: string[] = [];
    // The path to the start, then an in-order walk from there.
    const stack: Node[] = [];
    let n = this.#root;
    let skip = start;
    while (n !== null) {
      const left = sizeOf(n.left);
      if (skip < left) {
        stack.push(n);
        n = n.left;
      } else if (skip === left) {
        stack.push(n);
        break;
      } else {
        skip -= left + 1;
        n = n.right;
      }
    }
    while (out.length < count && stack.length > 0) {
      const top = stack.pop()!;
      out.push(top.key);
      for (let c = top.right; c !== null; c = c.left) stack.push(c);
    }
    return out;
  }

  /** Every member in order: O(n). */
  values(): string[] {
    return this.slice(0, this.size);
  }
}
