import { readdirSync, readFileSync } from "node:fs";

/** The pids of every descendant of `pid` (Linux /proc), depth first. */
export function descendants(pid: number): number[] {
  let children: number[];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

function vmRssKb(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8")
      .split("\n")
      .find((l) => l.startsWith("VmRSS:"));
    return line ? Number(line.split(/\s+/)[1]) : 0;
  } catch {
    return 0;
  }
}

/** Resident memory of a process started by the harness and its children, in MiB. */
export function serviceRssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  return [pid, ...descendants(pid)].reduce((sum, p) => sum + vmRssKb(p), 0) / 1024;
}

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on Linux

/** CPU time (user + system) a process has used so far, in microseconds. */
export function cpuMicros(pid: number): number {
  try {
    // Fields after the command name: state is the 1st, utime the 12th, stime the 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * System calls and context switches a process has made so far, every thread counted: `syscr` and
 * `syscw` of /proc/<pid>/io (reads and writes of any kind, sockets included) and the voluntary
 * switches (the process went to sleep waiting) and involuntary ones (it was preempted) of each
 * thread's status. Counts rather than times: they do not move with the machine's load as CPU does.
 */
export function syscallsOf(pid: number): {
  reads: number;
  writes: number;
  sleeps: number;
  preempted: number;
} {
  const out = { reads: 0, writes: 0, sleeps: 0, preempted: 0 };
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    out.reads = Number(/syscr: (\d+)/.exec(io)?.[1] ?? 0);
    out.writes = Number(/syscw: (\d+)/.exec(io)?.[1] ?? 0);
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const status = readFileSync(`/proc/${pid}/task/${task}/status`, "utf8");
      out.sleeps += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      out.preempted += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    }
  } catch {
    // The process ended: counts of zero.
  }
  return out;
}

/** The pids whose command line contains `text` (e.g. every postgres backend). */
export function pidsMatching(text: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(text);
      } catch {
        return false;
      }
    });
}

/**
 * PostgreSQL's processes that serve `database` (its backends and autovacuum workers, whose command
 * lines name it) and the server's own WAL and buffer writers: on a server other work shares, the
 * CPU a target costs PostgreSQL without the other databases' (pidsMatching("postgres") counts all).
 */
export function postgresOf(database: string): () => number[] {
  return () => [
    ...pidsMatching(` ${database} `),
    ...pidsMatching("walwriter"),
    ...pidsMatching("checkpointer"),
    ...pidsMatching("background writer"),
  ];
}

/** Named groups of processes whose CPU time a measurement reads before and after. */
export type ProcessGroups = Record<string, () => number[]>;

/** CPU microseconds each group has used so far (a group's pids are read anew each time). */
export function cpuOf(groups: ProcessGroups): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pids] of Object.entries(groups)) {
    out[name] = pids()
      .flatMap((pid) => [pid, ...descendants(pid)])
      .reduce((sum, pid) => sum + cpuMicros(pid), 0);
  }
  return out;
}

/** The pid of a process the harness started, with its children: for ProcessGroups. */
export const treeOf = (pid: number | undefined) => () => (pid === undefined ? [] : [pid]);
