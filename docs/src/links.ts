// Every relative link of the manual resolves: the file or folder exists, and a `#anchor` names a heading of
// the Markdown file it points into (GitHub's slugs). Parsed with markdown-it, so code blocks and inline code
// are never mistaken for links.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt, { type Token } from 'markdown-it';

const markdown = MarkdownIt({ html: true });

/** A link that does not resolve, with why. */
export interface BrokenLink {
  file: string;
  line: number;
  href: string;
  problem: string;
}

/** The Markdown files the manual is made of, relative to the repository root. */
export function manualFiles(root: string): string[] {
  const files = ['README.md', 'CONTRIBUTING.md', 'deploy/README.md'].filter((f) => existsSync(join(root, f)));
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) return walk(path);
      return entry.name.endsWith('.md') ? [path] : [];
    });
  files.push(...walk('docs'));
  for (const dir of ['packages', 'services', 'test-e2e'])
    for (const name of existsSync(join(root, dir)) ? readdirSync(join(root, dir)) : []) {
      const readme = dir === 'test-e2e' ? `${dir}/README.md` : `${dir}/${name}/README.md`;
      if (existsSync(join(root, readme)) && !files.includes(readme)) files.push(readme);
    }
  return files;
}

function textOf(tokens: Token[]): string {
  return tokens
    .map((token) =>
      token.children
        ? textOf(token.children)
        : ['text', 'code_inline'].includes(token.type)
          ? token.content
          : '',
    )
    .join('');
}

/** The anchors of a Markdown text's headings, as GitHub makes them. */
export function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const tokens = markdown.parse(text, {});
  const anchors = new Set<string>();
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') anchors.add(slugger.slug(textOf([tokens[index + 1]!])));
  });
  return anchors;
}

/** Every link and image target in a Markdown text, with the line it is on. */
export function linksOf(text: string): { href: string; line: number }[] {
  const links: { href: string; line: number }[] = [];
  for (const token of markdown.parse(text, {})) {
    if (token.type !== 'inline' || !token.children) continue;
    for (const child of token.children) {
      const href =
        child.type === 'link_open'
          ? child.attrGet('href')
          : child.type === 'image'
            ? child.attrGet('src')
            : null;
      if (href !== null) links.push({ href: String(href), line: (token.map?.[0] ?? 0) + 1 });
    }
  }
  return links;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/**
 * What is wrong with one link of `file` (relative to `root`), or undefined when it resolves. A link that leaves
 * the repository must land under one of `outside` (folders beside the checkout, relative to the root, such as
 * `../shared`); it is not checked further, since a clone does not have it.
 */
export function problemOf(
  root: string,
  file: string,
  href: string,
  outside: readonly string[],
): string | undefined {
  if (EXTERNAL.test(href)) return undefined;
  const [rawPath = '', rawAnchor] = href.split('#', 2);
  const path = decodeURIComponent(rawPath);
  const anchor = rawAnchor === undefined ? undefined : decodeURIComponent(rawAnchor);
  const target = path === '' ? join(root, file) : resolve(join(root, dirname(file)), path);
  const fromRoot = relative(root, target);
  if (fromRoot.startsWith(`..${sep}`) || fromRoot === '..') {
    return outside.some((prefix) => fromRoot === prefix || fromRoot.startsWith(`${prefix}${sep}`))
      ? undefined
      : `leaves the repository (${fromRoot})`;
  }
  if (!existsSync(target)) return `no such file or folder: ${fromRoot}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(target).isDirectory() || !target.endsWith('.md'))
    return `#${anchor} points into ${fromRoot}, not a Markdown file`;
  return anchorsOf(readFileSync(target, 'utf8')).has(anchor)
    ? undefined
    : `no heading #${anchor} in ${fromRoot}`;
}

/** Every link of the given files that does not resolve. */
export function brokenLinks(
  root: string,
  files: readonly string[],
  outside: readonly string[] = [],
): BrokenLink[] {
  return files.flatMap((file) =>
    linksOf(readFileSync(join(root, file), 'utf8')).flatMap(({ href, line }) => {
      const problem = problemOf(root, file, href, outside);
      return problem ? [{ file, line, href, problem }] : [];
    }),
  );
}
