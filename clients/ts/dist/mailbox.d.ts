export declare class Mailbox<T> {
    private readonly capacity;
    private readonly items;
    private readonly waiters;
    private failure;
    constructor(capacity: number);
    put(item: T): void;
    get(): Promise<T>;
    fail(err: Error): void;
}
export declare class Flag {
    private isSet;
    private readonly waiters;
    private failure;
    get set(): boolean;
    raise(): void;
    lower(): void;
    wait(): Promise<void>;
    fail(err: Error): void;
}
