// What mds-admin prints: for a person, aligned text; with --json, the API's answer as it is, for scripts.

type Row = Record<string, unknown>;

const isRow = (value: unknown): value is Row =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function scalar(value: unknown): string {
  if (value === null || value === undefined) return '-';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Rows as a table: one column per key any row has, headed by the key. */
export function table(rows: Row[], indent = ''): string {
  if (rows.length === 0) return `${indent}(none)`;
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const cells = rows.map((row) => columns.map((column) => scalar(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) =>
    indent +
    values
      .map((value, i) => value.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

/** Any answer, readably: fields as "name  value" lines, lists of objects as tables, nested objects indented. */
export function human(value: unknown, indent = ''): string {
  if (value === undefined) return `${indent}done`;
  if (Array.isArray(value))
    return value.every(isRow) ? table(value, indent) : indent + value.map(scalar).join(', ');
  if (!isRow(value)) return indent + scalar(value);
  const entries = Object.entries(value);
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  return entries
    .map(([key, field]) => {
      if ((Array.isArray(field) && field.length > 0 && field.every(isRow)) || isRow(field))
        return `${indent}${key}:\n${human(field, `${indent}  `)}`;
      return `${indent}${key.padEnd(width)}  ${Array.isArray(field) ? field.map(scalar).join(', ') || '(none)' : scalar(field)}`;
    })
    .join('\n');
}
