import { type NonceStore, type SealedPick } from './nonces.js';
export declare class FileNonceStore implements NonceStore {
    readonly directory: string;
    constructor(directory: string);
    private accountDir;
    private path;
    save(account: string, gameId: string, sealed: SealedPick): Promise<void>;
    load(account: string, gameId: string): Promise<SealedPick | null>;
    remove(account: string, gameId: string): Promise<void>;
    /** The games with a commit kept for `account`. */
    games(account: string): string[];
    /** Removes what is kept for games not in `keep` (for example the ids `myGames` lists:
     * every other game has ended). Returns how many went. */
    prune(account: string, keep: Set<string>): Promise<number>;
}
