// Things the README's snippets use without defining them: the page's own `render`, and the part
// of Node's `process` they touch (the check runs without @types/node, as in a browser project).

/** The page's function that shows a piece of the reply. */
declare function render(text: string): void;

declare const process: {
  readonly env: Record<string, string | undefined>;
  readonly stdout: { write(text: string): boolean };
};
