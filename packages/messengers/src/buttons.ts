export interface LinkButton {
  text: string;
  url: string;
}

/** Buttons laid out in rows of at most `perRow`, in their order (one per row when perRow is 1). */
export function inRows<T>(buttons: readonly T[], perRow: number): T[][] {
  const rows: T[][] = [];
  for (let i = 0; i < buttons.length; i += perRow) rows.push(buttons.slice(i, i + perRow));
  return rows;
}
