// Markdown to DOCX: marked parses the Markdown (CommonMark + GFM tables), the `docx` package writes
// the Word file. Headings become Word's Heading styles, lists Word numbering, tables Word tables with
// a header row, so that Word (and mammoth, reading it back) sees the same structure.
import {
  AlignmentType,
  BorderStyle,
  Document,
  ExternalHyperlink,
  HeadingLevel,
  LevelFormat,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
  WidthType,
  type ParagraphChild,
} from 'docx';
import { Lexer, type Token, type Tokens } from 'marked';

const HEADINGS = [
  HeadingLevel.HEADING_1,
  HeadingLevel.HEADING_2,
  HeadingLevel.HEADING_3,
  HeadingLevel.HEADING_4,
  HeadingLevel.HEADING_5,
  HeadingLevel.HEADING_6,
] as const;

interface RunStyle {
  bold?: boolean;
  italics?: boolean;
  strike?: boolean;
  code?: boolean;
}

function decode(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

function inline(tokens: Token[] | undefined, style: RunStyle = {}): ParagraphChild[] {
  const out: ParagraphChild[] = [];
  for (const t of tokens ?? []) {
    switch (t.type) {
      case 'strong':
        out.push(...inline((t as Tokens.Strong).tokens, { ...style, bold: true }));
        break;
      case 'em':
        out.push(...inline((t as Tokens.Em).tokens, { ...style, italics: true }));
        break;
      case 'del':
        out.push(...inline((t as Tokens.Del).tokens, { ...style, strike: true }));
        break;
      case 'codespan':
        out.push(run(decode((t as Tokens.Codespan).text), { ...style, code: true }));
        break;
      case 'br':
        out.push(new TextRun({ text: '', break: 1 }));
        break;
      case 'link': {
        const l = t as Tokens.Link;
        out.push(new ExternalHyperlink({ link: l.href, children: inline(l.tokens, style) }));
        break;
      }
      case 'text': {
        const x = t as Tokens.Text;
        if (x.tokens?.length) out.push(...inline(x.tokens, style));
        else out.push(run(decode(x.text), style));
        break;
      }
      default:
        out.push(run(decode('text' in t && typeof t.text === 'string' ? t.text : t.raw), style));
    }
  }
  return out;
}

function run(text: string, s: RunStyle): TextRun {
  return new TextRun({
    text,
    bold: s.bold,
    italics: s.italics,
    strike: s.strike,
    ...(s.code ? { style: CODE_STYLE } : {}),
  });
}

type Block = Paragraph | Table;

/** Inline code as a character style of its own: readers (mammoth's style map) see code, not a font. */
export const CODE_STYLE = 'Code';

class Writer {
  private lists = 0;

  blocks(tokens: Token[], quote = 0): Block[] {
    const out: Block[] = [];
    for (const t of tokens) out.push(...this.block(t, quote));
    return out;
  }

  private block(t: Token, quote: number): Block[] {
    const indent = quote ? { indent: { left: 720 * quote } } : {};
    switch (t.type) {
      case 'heading': {
        const h = t as Tokens.Heading;
        return [new Paragraph({ heading: HEADINGS[h.depth - 1], children: inline(h.tokens) })];
      }
      case 'paragraph':
        return [new Paragraph({ children: inline((t as Tokens.Paragraph).tokens), ...indent })];
      case 'list':
        return this.list(t as Tokens.List, 0);
      case 'table':
        return [table(t as Tokens.Table), new Paragraph({})];
      case 'code':
        return (t as Tokens.Code).text
          .split('\n')
          .map((line) => new Paragraph({ children: [run(line, { code: true })], ...indent }));
      case 'blockquote':
        return this.blocks((t as Tokens.Blockquote).tokens, quote + 1);
      case 'hr':
        return [
          new Paragraph({
            border: { bottom: { style: BorderStyle.SINGLE, size: 6, color: '999999', space: 1 } },
          }),
        ];
      case 'space':
        return [];
      default:
        return 'text' in t && typeof t.text === 'string' && t.text.trim()
          ? [new Paragraph({ children: [run(decode(t.text), {})], ...indent })]
          : [];
    }
  }

  private list(l: Tokens.List, level: number, instance = ++this.lists): Block[] {
    const out: Block[] = [];
    for (const item of l.items) {
      let first = true;
      for (const t of item.tokens) {
        if (t.type === 'list') {
          out.push(...this.list(t as Tokens.List, level + 1));
          continue;
        }
        const children =
          t.type === 'text' || t.type === 'paragraph' ? inline((t as Tokens.Text).tokens ?? [t]) : null;
        if (!children) {
          out.push(...this.block(t, 0));
          continue;
        }
        out.push(
          first
            ? new Paragraph({
                children,
                numbering: {
                  reference: l.ordered ? 'ordered' : 'bullets',
                  level: Math.min(level, 8),
                  instance,
                },
              })
            : new Paragraph({ children, indent: { left: 720 * (level + 1) } }),
        );
        first = false;
      }
    }
    return out;
  }
}

function table(t: Tokens.Table): Table {
  const align = (a: Tokens.TableCell['align']) =>
    a === 'center' ? AlignmentType.CENTER : a === 'right' ? AlignmentType.RIGHT : AlignmentType.LEFT;
  const row = (cells: Tokens.TableCell[], header: boolean) =>
    new TableRow({
      // docx writes <w:tblHeader/> for any value given, and readers take its presence as "header".
      ...(header ? { tableHeader: true } : {}),
      children: cells.map(
        (c) =>
          new TableCell({
            children: [
              new Paragraph({
                alignment: align(c.align),
                children: inline(c.tokens),
              }),
            ],
          }),
      ),
    });
  return new Table({
    width: { size: 100, type: WidthType.PERCENTAGE },
    rows: [row(t.header, true), ...t.rows.map((r) => row(r, false))],
  });
}

function levels(ordered: boolean) {
  return Array.from({ length: 9 }, (_, level) => ({
    level,
    format: ordered ? LevelFormat.DECIMAL : LevelFormat.BULLET,
    text: ordered ? `%${level + 1}.` : ['•', '◦', '▪'][level % 3]!,
    alignment: AlignmentType.LEFT,
    style: { paragraph: { indent: { left: 720 * (level + 1), hanging: 360 } } },
  }));
}

/** The DOCX bytes of a Markdown text. */
export async function markdownToDocx(markdown: string, title?: string): Promise<Buffer> {
  const tokens = new Lexer({ gfm: true }).lex(markdown);
  const doc = new Document({
    ...(title ? { title } : {}),
    styles: {
      characterStyles: [{ id: CODE_STYLE, name: CODE_STYLE, run: { font: 'Courier New' } }],
    },
    numbering: {
      config: [
        { reference: 'bullets', levels: levels(false) },
        { reference: 'ordered', levels: levels(true) },
      ],
    },
    sections: [{ children: new Writer().blocks(tokens) }],
  });
  return Packer.toBuffer(doc);
}
