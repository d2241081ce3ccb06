// The two waiting primitives the client and its games use: a bounded queue that drops its
// oldest item when full, and a flag to wait on. Both can be failed, which rejects every
// waiter now and later (the client is closed or cannot reconnect).

export class Mailbox<T> {
  private readonly items: T[] = [];
  private readonly waiters: Array<{ resolve: (item: T) => void; reject: (err: Error) => void }> = [];
  private failure: Error | null = null;

  constructor(private readonly capacity: number) {}

  put(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(item);
      return;
    }
    this.items.push(item);
    if (this.items.length > this.capacity) this.items.shift();
  }

  get(): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  fail(err: Error): void {
    this.failure = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject(err);
  }
}

export class Flag {
  private isSet = false;
  private readonly waiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private failure: Error | null = null;

  get set(): boolean {
    return this.isSet;
  }

  raise(): void {
    this.isSet = true;
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  lower(): void {
    this.isSet = false;
  }

  wait(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.isSet) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  fail(err: Error): void {
    this.failure = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject(err);
  }
}
