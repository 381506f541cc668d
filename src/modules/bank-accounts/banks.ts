/**
 * The banks of the Guatemalan banking system (supervised by the Superintendencia de Bancos) that a
 * merchant can withdraw to. `name` is what `bank_name` takes; `code` is posd's own short, stable
 * identifier (not an ACH routing number, which the hosted service does not publish). `aliases` are the
 * legal or older names people also type; they resolve to the same bank.
 */
export interface Bank {
  name: string;
  code: string;
  aliases: readonly string[];
}

export const BANKS: readonly Bank[] = [
  { name: 'Banco Industrial', code: 'BI', aliases: ['BI', 'Banco Industrial, S.A.'] },
  { name: 'Banrural', code: 'BANRURAL', aliases: ['Banco de Desarrollo Rural', 'Banco de Desarrollo Rural, S.A.'] },
  { name: 'BAM', code: 'BAM', aliases: ['Banco Agromercantil', 'Banco Agromercantil de Guatemala', 'Bam'] },
  { name: 'G&T Continental', code: 'GYT', aliases: ['Banco G&T Continental', 'GyT Continental', 'G y T Continental'] },
  { name: 'Banco Promerica', code: 'PROMERICA', aliases: ['Promerica'] },
  { name: 'BAC Credomatic', code: 'BAC', aliases: ['Banco de América Central', 'BAC'] },
  { name: 'Bantrab', code: 'BANTRAB', aliases: ['Banco de los Trabajadores'] },
  { name: 'Banco Internacional', code: 'INTERBANCO', aliases: ['Interbanco'] },
  { name: 'Vivibanco', code: 'VIVIBANCO', aliases: ['Vivibanco, S.A.'] },
  { name: 'Banco Azteca', code: 'AZTECA', aliases: ['Banco Azteca de Guatemala'] },
  { name: 'Banco INV', code: 'INV', aliases: ['INV'] },
  { name: 'Banco Ficohsa', code: 'FICOHSA', aliases: ['Ficohsa', 'Banco Ficohsa Guatemala'] },
  { name: 'Crédito Hipotecario Nacional', code: 'CHN', aliases: ['CHN', 'El Crédito Hipotecario Nacional de Guatemala'] },
  { name: 'Banco de Antigua', code: 'ANTIGUA', aliases: ['Antigua'] },
  { name: 'Banco Inmobiliario', code: 'INMOBILIARIO', aliases: ['Inmobiliario'] },
  { name: 'Banco Cuscatlán', code: 'CUSCATLAN', aliases: ['Banco Cuscatlán Guatemala', 'Cuscatlán'] },
];

/** Case, accents, punctuation and spacing do not make a different bank. */
function fold(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[.,]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

const BY_FOLDED = new Map<string, Bank>();
for (const bank of BANKS) {
  for (const n of [bank.name, bank.code, ...bank.aliases]) BY_FOLDED.set(fold(n), bank);
}

/** The bank a `bank_name` names (its name, code or a known alias), or undefined. */
export function findBank(name: string): Bank | undefined {
  return BY_FOLDED.get(fold(name));
}
