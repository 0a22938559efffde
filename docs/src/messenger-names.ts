// Where production code spells a messenger's name. A messenger is added in the catalogue
// (packages/contracts/src/messengers.ts) and its provider (packages/messengers); every other production file
// takes what it needs from them. This finds the files that still name one, so that a test keeps it so.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { BUILT_IN_MESSENGERS, Messenger } from '@mds/contracts';
import ts from 'typescript';

/**
 * Where naming a messenger is the point: the catalogue, the providers, the simulator of their APIs. And the test
 * infrastructure (testkit, local-infra), which starts stacks and never ships in an image.
 */
export const MESSENGER_HOMES: readonly RegExp[] = [
  /^packages\/contracts\/src\/messengers\.ts$/,
  /^packages\/messengers\//,
  /^services\/messenger-simulator\//,
  /^packages\/(testkit|local-infra)\//,
];

/** A spelling of a messenger in a file: where, what kind of token, its text. */
export interface Spelling {
  file: string;
  line: number;
  text: string;
}

/** What a production source file is: TypeScript under a package's or service's src/ (the web app's too), no test. */
function isProduction(path: string): boolean {
  if (!/\.tsx?$/.test(path) || path.endsWith('.d.ts')) return false;
  if (/\.(test|spec)\.tsx?$/.test(path)) return false;
  return !path
    .split('/')
    .some((part) => ['test', 'tests', 'test-support', 'testing', 'bench', 'e2e'].includes(part));
}

function walk(root: string, dir: string, out: string[]): void {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) walk(root, path, out);
    else if (isProduction(path)) out.push(path);
  }
}

/** The production sources of every workspace package and service (paths relative to the repository, with /). */
export function productionSources(root: string): string[] {
  const out: string[] = [];
  for (const group of ['packages', 'services']) {
    for (const name of readdirSync(join(root, group))) {
      for (const src of ['src', 'web/src']) {
        try {
          walk(root, `${group}/${name}/${src}`, out);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        }
      }
    }
  }
  return out.map((p) => relative(root, join(root, p)).split(sep).join('/')).sort();
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What names a messenger, from the built-in ones of the catalogue. In a string, a template's text or JSX text:
 * the whole text being its name ('telegram'), or holding its label as a word ("Telegram", "MAX"), its sender's
 * deployment or schema name, or its delivery topic. In an identifier: its name (when longer than a common word:
 * `telegramSent`, `TELEGRAM_TOKEN`) or its enum constant (`MESSENGER_MAX`). Comments are not code: they may say
 * "Telegram offset, MAX marker" to explain a general rule by its cases.
 */
function matchers() {
  const enumKeys = Object.keys(Messenger);
  return BUILT_IN_MESSENGERS.map((m) => {
    const inText = new RegExp(
      [
        `\\b${escape(m.label)}\\b`,
        escape(m.sender),
        escape(m.sender.replaceAll('-', '_')),
        escape(m.deliveryTopic),
      ].join('|'),
    );
    const constant = enumKeys.find((k) => Messenger[k as keyof typeof Messenger] === m.code);
    const identifier = new RegExp(
      m.name.length > 4 ? escape(m.name) : `^${escape(constant ?? m.name)}$`,
      'i',
    );
    return {
      text: (t: string) => t === m.name || inText.test(t),
      identifier: (name: string) => identifier.test(name) || name === constant,
    };
  });
}

/** Every spelling of a built-in messenger in one source text. */
export function spellingsIn(file: string, source: string): Spelling[] {
  const all = matchers();
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, false, kind);
  const found: Spelling[] = [];
  const at = (node: ts.Node, text: string) =>
    found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, text });
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node) ||
      ts.isJsxText(node)
    ) {
      if (all.some((m) => m.text(node.text))) at(node, node.text.trim().slice(0, 80));
    } else if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) {
      if (all.some((m) => m.identifier(node.text))) at(node, node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The production files outside the messengers' homes that spell one, with where. */
export function filesSpellingMessengers(root: string): Map<string, Spelling[]> {
  const out = new Map<string, Spelling[]>();
  for (const file of productionSources(root)) {
    if (MESSENGER_HOMES.some((home) => home.test(file))) continue;
    const spellings = spellingsIn(file, readFileSync(join(root, file), 'utf8'));
    if (spellings.length) out.set(file, spellings);
  }
  return out;
}
