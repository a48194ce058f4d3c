import { readFileSync } from "node:fs";

/** The pids of every descendant of `pid` (Linux /proc), depth first. */
function descendants(pid: number): number[] {
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

/**
 * Resident memory of a service started by the harness, in MiB. The harness's
 * child is tsx's launcher, which runs the service in a node child of its own:
 * the figure is the service's process (every descendant of the launcher), not
 * the launcher's constant ~50 MiB. Falls back to the launcher when it has no child.
 */
export function serviceRssMiB(launcherPid: number | undefined): number {
  if (launcherPid === undefined) return Number.NaN;
  const tree = descendants(launcherPid);
  const kb = (tree.length > 0 ? tree : [launcherPid]).reduce((sum, pid) => sum + vmRssKb(pid), 0);
  return kb / 1024;
}
