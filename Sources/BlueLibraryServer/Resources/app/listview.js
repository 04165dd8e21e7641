// The list view: the albums as a table (title, artist, year, genre, added) beside the cover
// scroller, sorted by the server (`sort`), and virtualised: only the rows in view (and a few
// around them) are in the DOM, absolutely placed in a body as tall as every row would be; rows
// not loaded yet show as "…" while their page comes: just past what is loaded by cursor
// paging, far beyond it (the scroll bar dragged there) by `offset` around them (AlbumList.need).

/** Row height in pixels (the stylesheet's `.grid-row` height). */
export const ROW = 40;
/** Rows rendered above and below the visible ones. */
const OVERSCAN = 8;

/** The columns: the `sort` value each asks the server for. */
export const COLUMNS = [
  { key: 'title', label: 'Title', sort: 'title' },
  { key: 'artist', label: 'Artist', sort: 'artist' },
  { key: 'year', label: 'Year', sort: 'year' },
  { key: 'genre', label: 'Genre', sort: 'genre' },
  { key: 'createdAt', label: 'Added', sort: 'createdAt' },
];

const added = (text) => (text ? text.slice(0, 10) : '');

export class AlbumTable {
  /**
   * @param grid the `role=grid` element (it scrolls; its header row is sticky)
   * @param onSelect called with an album id when a row is clicked
   * @param onSort called with the `sort` value a column header asks for ('' for the library's order)
   */
  constructor(grid, { onSelect, onSort }) {
    this.grid = grid;
    this.list = null;
    this.selected = null;
    this.chosen = new Set();
    this.sort = '';
    this.body = grid.querySelector('.grid-rows');
    this.headers = new Map();
    for (const column of COLUMNS) {
      const header = grid.querySelector(`[data-column=${column.key}]`);
      this.headers.set(column.key, header);
      header.querySelector('button').addEventListener('click', () => onSort(this.nextSort(column)));
    }
    this.body.addEventListener('click', (event) => {
      const row = event.target.closest('[role=row]');
      if (row?.dataset.id) { onSelect(row.dataset.id, event); grid.focus(); }
    });
    this.frame = 0;
    grid.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(grid);
  }

  get visible() { return !this.grid.hidden; }

  /** A header's next sort: ascending, then descending, then back to the library's order. */
  nextSort(column) {
    if (this.sort === column.sort) return `-${column.sort}`;
    if (this.sort === `-${column.sort}`) return '';
    return column.sort;
  }

  /** How many rows the table has: every album once the total is known, else what is loaded (and one more while there is more). */
  rowCount() {
    const list = this.list;
    if (!list) return 0;
    if (!list.next) return list.items.length;
    return Math.max(list.total ?? 0, list.items.length + 1);
  }

  schedule() {
    if (this.frame || !this.visible) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
  }

  /**
   * Shows `list` with `selected` (the album id the keys move from), `chosen` (the ids selected
   * together, a Set) and `sort`; renders when visible.
   */
  show(list, selected, sort, chosen = new Set(selected ? [selected] : [])) {
    this.list = list;
    this.selected = selected;
    this.chosen = chosen;
    this.sort = sort;
    for (const column of COLUMNS) {
      const header = this.headers.get(column.key);
      const state = sort === column.sort ? 'ascending' : sort === `-${column.sort}` ? 'descending' : 'none';
      header.setAttribute('aria-sort', state);
      header.querySelector('button').dataset.sort = state;
    }
    this.schedule();
  }

  render() {
    const list = this.list;
    if (!list || !this.visible) return;
    const count = this.rowCount();
    this.grid.setAttribute('aria-rowcount', String(list.next && list.total == null ? -1 : count + 1));
    this.body.style.height = `${count * ROW}px`;
    const head = this.grid.querySelector('.grid-head').offsetHeight;
    const top = Math.max(0, this.grid.scrollTop - head);
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const last = Math.min(count - 1, Math.ceil((top + this.grid.clientHeight) / ROW) + OVERSCAN);
    const rows = [];
    for (let index = first; index <= last; index += 1) rows.push(this.row(index, list.at(index)));
    // While a row is dragged over, its drop mark stays.
    const mark = this.body.querySelector('.drop-before, .drop-after');
    if (mark) rows.find((row) => row.dataset.id === mark.dataset.id)?.classList.add(mark.classList.contains('drop-after') ? 'drop-after' : 'drop-before');
    this.body.replaceChildren(...rows);
    const selectedRow = this.selected && this.body.querySelector(`[data-id="${CSS.escape(this.selected)}"]`);
    if (selectedRow) this.grid.setAttribute('aria-activedescendant', selectedRow.id);
    else this.grid.removeAttribute('aria-activedescendant');
    // Rows in view that are not loaded: their page (by cursor, or by offset when far); its change event renders again.
    if (last >= list.items.length && list.next) list.need(first, last);
  }

  row(index, item) {
    const row = document.createElement('div');
    row.setAttribute('role', 'row');
    row.className = 'grid-row';
    row.style.top = `${index * ROW}px`;
    row.setAttribute('aria-rowindex', String(index + 2));
    const cells = item
      ? [item.title, item.artist, item.year ?? '', item.genre, added(item.createdAt)]
      : ['…', '', '', '', ''];
    if (item) {
      row.id = `row-${item.id}`;
      row.dataset.id = item.id;
      // Reordering by drag and drop, as on the covers (main.js refuses the drag where albums cannot be moved).
      row.draggable = true;
      row.setAttribute('aria-selected', String(this.chosen.has(item.id)));
      if (item.id === this.selected) row.classList.add('active');
    } else {
      row.setAttribute('aria-busy', 'true');
    }
    row.append(...cells.map((text, i) => {
      const cell = document.createElement('div');
      cell.setAttribute('role', 'gridcell');
      cell.className = `cell ${COLUMNS[i].key}`;
      cell.textContent = String(text);
      return cell;
    }));
    return row;
  }

  /** Scrolls so the row at `index` is in view (the least that does it). */
  reveal(index) {
    if (index < 0 || !this.visible) return;
    const head = this.grid.querySelector('.grid-head').offsetHeight;
    const top = index * ROW;
    const view = this.grid.clientHeight - head;
    if (top < this.grid.scrollTop) this.grid.scrollTop = top;
    else if (top + ROW > this.grid.scrollTop + view) this.grid.scrollTop = top + ROW - view;
    this.schedule();
  }

  /** Rows per screen, for Page Up / Page Down. */
  get pageRows() {
    return Math.max(1, Math.floor((this.grid.clientHeight - this.grid.querySelector('.grid-head').offsetHeight) / ROW) - 1);
  }
}
