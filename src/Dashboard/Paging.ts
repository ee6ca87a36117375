/** Keyset pages of the dashboard's lists, newest first: a page of rows and where the next (older) one starts. */

export interface KeysetPage<Row, Cursor> {
  readonly rows: ReadonlyArray<Row>
  /** The cursor of the next (older) page, when there is one. */
  readonly older: Cursor | undefined
}

/**
 * A page of `limit` rows from `rows`, read with one more than `limit` (`LIMIT limit + 1`): that one
 * says whether an older page exists, which starts after the page's last row (`cursorOf`).
 */
export const keysetPage = <Row, Cursor>(
  rows: ReadonlyArray<Row>,
  limit: number,
  cursorOf: (row: Row) => Cursor
): KeysetPage<Row, Cursor> => {
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return { rows: page, older: rows.length > limit && last !== undefined ? cursorOf(last) : undefined }
}
