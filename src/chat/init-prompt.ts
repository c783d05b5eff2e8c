/** `/init`: the fixed task of the turn that drafts the repository's AGENTS.md. */

export const INIT_FILE = 'AGENTS.md';

export const INIT_PROMPT = `Draft ${INIT_FILE} for this repository: the guide coding agents read before they work here.
First read the repository: its layout, README and docs, the build, test and lint commands (package
manifests, Makefiles, CI files), and the conventions the code follows. Then write ${INIT_FILE} at the
workspace root with write_file (if it exists, read it and improve it): short sections on what the project
is, how to build, test and lint it (exact commands), the layout, and the conventions to keep. Only what
you found in the repository, no guesses. Write no other file and run nothing that changes files.`;
