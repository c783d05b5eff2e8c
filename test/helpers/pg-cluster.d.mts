// Types of pg-cluster.mjs (plain JavaScript, so that the benches run it without a build).

/** Settings for a cluster whose data may be lost: durability buys nothing in a test run. */
export const THROWAWAY: Readonly<Record<string, string>>;

/** The server binaries: a chosen folder holding `postgres`, else the newest under /usr/lib/postgresql. */
export function findBinaries(chosen?: string): { bin: string; version?: string } | undefined;

/** A loopback port nobody listened on a moment ago. */
export function freePort(): Promise<number>;

export interface Cluster {
  /** The maintenance database `postgres`, as the role `keel` with its password. */
  url: string;
  /** Immediate shutdown; the caller removes the folder. */
  stop(): Promise<void>;
}

/** initdb in `dir` (made and later removed by the caller) and start the server with these `-c` settings. */
export function startCluster(
  bin: string,
  dir: string,
  settings?: Readonly<Record<string, string | number>>,
): Promise<Cluster>;

/** A new, empty database named `prefix` + random hex on the server; resolves to its URL. */
export function freshDatabase(serverUrl: string, prefix: string): Promise<string>;
