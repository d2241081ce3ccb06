// The two waiting primitives the client and its games use: a bounded queue that drops its
// oldest item when full, and a flag to wait on. Both can be failed, which rejects every
// waiter now and later (the client is closed or cannot reconnect).
export class Mailbox {
    capacity;
    items = [];
    waiters = [];
    failure = null;
    constructor(capacity) {
        this.capacity = capacity;
    }
    put(item) {
        const waiter = this.waiters.shift();
        if (waiter) {
            waiter.resolve(item);
            return;
        }
        this.items.push(item);
        if (this.items.length > this.capacity)
            this.items.shift();
    }
    get() {
        if (this.items.length > 0)
            return Promise.resolve(this.items.shift());
        if (this.failure)
            return Promise.reject(this.failure);
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
    }
    fail(err) {
        this.failure = err;
        for (const waiter of this.waiters.splice(0))
            waiter.reject(err);
    }
}
export class Flag {
    isSet = false;
    waiters = [];
    failure = null;
    get set() {
        return this.isSet;
    }
    raise() {
        this.isSet = true;
        for (const waiter of this.waiters.splice(0))
            waiter.resolve();
    }
    lower() {
        this.isSet = false;
    }
    wait() {
        if (this.failure)
            return Promise.reject(this.failure);
        if (this.isSet)
            return Promise.resolve();
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
    }
    fail(err) {
        this.failure = err;
        for (const waiter of this.waiters.splice(0))
            waiter.reject(err);
    }
}
