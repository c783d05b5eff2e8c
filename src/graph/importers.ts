/** Which files import a module or a workspace file, from the import specifiers the index holds. */
import { posix } from 'node:path';

const SOURCE_EXT = /\.(d\.ts|[cm]?[jt]sx?|py|go|rs|java)$/;

/** A path without its source extension or a trailing /index (how imports name files). */
function stem(path: string): string {
  return path.replace(SOURCE_EXT, '').replace(/\/(index|__init__|mod)$/, '');
}

/** Where a relative specifier of `importer` points, as a workspace path stem; undefined for a package name. */
function target(importer: string, module: string): string | undefined {
  const dir = posix.dirname(importer);
  if (module.startsWith('./') || module.startsWith('../'))
    return stem(posix.normalize(posix.join(dir, module)));
  // Python: `.mod`, `..pkg.mod`
  const py = /^(\.+)(.*)$/.exec(module);
  if (py) {
    let base = dir;
    for (let i = 1; i < (py[1] ?? '').length; i++) base = posix.dirname(base);
    return stem(posix.join(base, (py[2] ?? '').replaceAll('.', '/')));
  }
  return undefined;
}

/** The files whose imports name `module`: a workspace file (by relative specifier or dotted path) or a package. */
export function importersOf(
  imports: Array<{ path: string; module: string }>,
  module: string,
  asFile: boolean,
): string[] {
  const wanted = stem(module.replace(/^\.\//, ''));
  const found = new Set<string>();
  for (const { path, module: spec } of imports) {
    const relative = target(path, spec);
    // a package-style name (`pkg.mod`, `com.x.Y`, `crate::a::b`) names a file by its path's tail
    const tail = spec
      .replace(/^crate::/, '')
      .replaceAll('::', '/')
      .replaceAll('.', '/');
    const hit = asFile
      ? relative !== undefined
        ? relative === wanted
        : tail === wanted || wanted.endsWith(`/${tail}`)
      : spec === module || [`${module}/`, `${module}.`, `${module}::`].some((p) => spec.startsWith(p));
    if (hit) found.add(path);
  }
  return [...found].sort();
}
