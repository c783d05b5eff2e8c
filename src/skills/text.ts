/** What a skill's name and description may be: one line of plain text, bounded, with nothing that steers a terminal or a reader. */

/** The Agent Skills rule for a name: lowercase letters, digits and single hyphens, at most 64. */
export const SKILL_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_NAME = 64;
/** A description in the catalog is cut here: the catalog is in every request. */
export const MAX_DESCRIPTION = 200;

// C0 and C1 controls, and the invisible format characters (bidi overrides, zero widths, the BOM)
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;

/** One line of plain text: controls and line breaks become spaces, runs of space one, cut at `max` with an ellipsis. */
export function oneLine(value: string, max: number): string {
  const flat = value.replace(INVISIBLE, ' ').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

export function validName(name: string): boolean {
  return name.length <= MAX_NAME && SKILL_NAME.test(name);
}
