/**
 * The chat's colours. The full-screen app always has colour (NO_COLOR and TERM=dumb get the plain
 * app); the plain app asks `colorAllowed` and uses the identity style otherwise. Every string
 * passed in here is keel's own or already inert.
 */
export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  magenta(s: string): string;
  italic(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;

export const color: Style = {
  dim: sgr(2, 22),
  bold: sgr(1, 22),
  red: sgr(31, 39),
  green: sgr(32, 39),
  yellow: sgr(33, 39),
  cyan: sgr(36, 39),
  magenta: sgr(35, 39),
  italic: sgr(3, 23),
};

const same = (s: string) => s;
export const noColor: Style = {
  dim: same,
  bold: same,
  red: same,
  green: same,
  yellow: same,
  cyan: same,
  magenta: same,
  italic: same,
};

/** Whether escape codes may be written at all: not with NO_COLOR, not on a dumb terminal, not into a pipe. */
export function colorAllowed(env: NodeJS.ProcessEnv, stream: { isTTY?: boolean }): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== 'dumb';
}
