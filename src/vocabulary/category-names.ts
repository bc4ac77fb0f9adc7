// When two category names are one name. Categories are shared by every account, so a
// name is compared as people read it: `Cats`, `CATS`, `Cats ` and `Cats` with a
// zero-width space in it are one name, and a second is 409 category_name_taken.

// Characters a renderer shows as nothing (zero-width spaces and joiners, soft hyphens,
// variation selectors, BOM…): Unicode's Default_Ignorable_Code_Point.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu

/**
 * A name as its uniqueness sees it: compatibility-normalised (NFKC: fullwidth `Ｃａｔｓ`
 * and the ligature in `ﬁsh` are their plain letters), without invisible characters,
 * white space trimmed and each run of it one space, and case-folded by upper then lower
 * case (`Straße` and `STRASSE` are one name). Folded here rather than by lower() in
 * SQL: SQLite's knows ASCII only. Stored in `name_key`, under a unique index.
 */
export const foldName = (name: string): string => name.normalize('NFKC').replace(INVISIBLE, '').replace(/\s+/gu, ' ').trim().toUpperCase().toLowerCase()
