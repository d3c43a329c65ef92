/**
 * A card's task as rendered Markdown, safely: marked's lexer (a maintained parser) gives the tokens,
 * and each becomes a React element, so text is always text (React escapes it). Raw HTML in a card is
 * shown as the text it is, never parsed; links go only to http(s) and mailto, open in a new tab.
 */
import { Fragment, type ReactNode } from 'react';
import { Lexer, type Token, type Tokens } from 'marked';

const SAFE_URL = /^(https?:|mailto:)/i;

function inline(tokens: Token[] | undefined, key = ''): ReactNode {
  return (tokens ?? []).map((t, i) => (
    <Fragment key={`${key}${i}`}>{inlineToken(t, `${key}${i}.`)}</Fragment>
  ));
}

function inlineToken(t: Token, key: string): ReactNode {
  switch (t.type) {
    case 'strong':
      return <strong>{inline((t as Tokens.Strong).tokens, key)}</strong>;
    case 'em':
      return <em>{inline((t as Tokens.Em).tokens, key)}</em>;
    case 'del':
      return <del>{inline((t as Tokens.Del).tokens, key)}</del>;
    case 'codespan':
      return <code>{(t as Tokens.Codespan).text}</code>;
    case 'br':
      return <br />;
    case 'link': {
      const l = t as Tokens.Link;
      return SAFE_URL.test(l.href) ? (
        <a href={l.href} target="_blank" rel="noreferrer noopener">
          {inline(l.tokens, key)}
        </a>
      ) : (
        inline(l.tokens, key)
      );
    }
    case 'image':
      return `[image: ${(t as Tokens.Image).text}]`; // a card's page loads nothing it names
    case 'text': {
      const x = t as Tokens.Text;
      return x.tokens ? inline(x.tokens, key) : x.text;
    }
    case 'escape':
      return (t as Tokens.Escape).text;
    default:
      return t.raw; // html and anything else: as the text it is
  }
}

function block(t: Token, key: string): ReactNode {
  switch (t.type) {
    case 'heading': {
      const h = t as Tokens.Heading;
      // card headings sit under the inspector's own: h4 and smaller
      const Tag = (['h4', 'h5', 'h6'] as const)[Math.min(2, h.depth - 1)]!;
      return <Tag>{inline(h.tokens, key)}</Tag>;
    }
    case 'paragraph':
      return <p>{inline((t as Tokens.Paragraph).tokens, key)}</p>;
    case 'code':
      return (
        <pre>
          <code>{(t as Tokens.Code).text}</code>
        </pre>
      );
    case 'blockquote':
      return <blockquote>{blocks((t as Tokens.Blockquote).tokens, key)}</blockquote>;
    case 'list': {
      const l = t as Tokens.List;
      const items = l.items.map((it, i) => (
        <li key={i}>
          {it.task && <input type="checkbox" checked={it.checked ?? false} disabled aria-label="done" />}
          {blocks(it.tokens, `${key}${i}.`)}
        </li>
      ));
      return l.ordered ? (
        <ol start={typeof l.start === 'number' ? l.start : undefined}>{items}</ol>
      ) : (
        <ul>{items}</ul>
      );
    }
    case 'table': {
      const tb = t as Tokens.Table;
      return (
        <table>
          <thead>
            <tr>
              {tb.header.map((c, i) => (
                <th key={i}>{inline(c.tokens, `${key}h${i}.`)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {tb.rows.map((r, i) => (
              <tr key={i}>
                {r.map((c, j) => (
                  <td key={j}>{inline(c.tokens, `${key}${i}.${j}.`)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      );
    }
    case 'hr':
      return <hr />;
    case 'space':
      return null;
    case 'text': {
      const x = t as Tokens.Text;
      return <p>{x.tokens ? inline(x.tokens, key) : x.text}</p>;
    }
    default:
      return <p>{t.raw}</p>; // html blocks: the text, not markup
  }
}

function blocks(tokens: Token[], key = ''): ReactNode {
  return tokens.map((t, i) => <Fragment key={`${key}${i}`}>{block(t, `${key}${i}.`)}</Fragment>);
}

export function Markdown({ text }: { text: string }) {
  return <>{blocks(new Lexer({ gfm: true }).lex(text))}</>;
}
