/**
 * Writing cards from the board: the card editor (new, or a change to a card: title, flow, workspace
 * from the granted folders, the command of a command flow, the task in markdown, a schedule for a new
 * card) and the text editor of a card file (a broken card's file: its error, its text to fix, or the
 * trash). Both are modal <dialog>s: the browser keeps the keyboard inside and Escape closes them.
 */
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { BoardView, CardDetail, CardForm, CardSource } from '../shared/board-types.ts';
import { FolderPicker } from './FolderPicker.tsx';
import { Modal } from './Modal.tsx';

/** A command as the editor shows it: a shell line, or argv as a JSON list. */
function commandText(c: string | string[] | undefined): string {
  if (c === undefined) return '';
  return typeof c === 'string' ? c : JSON.stringify(c);
}

/** Back from the editor's text: a JSON list of strings stays argv; anything else is a shell line. */
export function parseCommand(text: string): string | string[] | undefined {
  const t = text.trim();
  if (!t) return undefined;
  if (t.startsWith('[')) {
    try {
      const v: unknown = JSON.parse(t);
      if (Array.isArray(v) && v.length && v.every((x) => typeof x === 'string')) return v;
    } catch {
      // a shell line that starts with `[` (a test expression)
    }
  }
  return t;
}

export type EditorTarget = { mode: 'new' } | { mode: 'edit'; detail: CardDetail };

/** The card editor: a new card, or a change to one. `onSaved` gets the card's id. */
export function CardEditor({
  api,
  board,
  target,
  onClose,
  onSaved,
}: {
  api: BoardApi;
  board: BoardView;
  target: EditorTarget;
  onClose: () => void;
  onSaved: (id: string) => void;
}) {
  const editing = target.mode === 'edit' ? target.detail : undefined;
  const [form, setForm] = useState<CardForm>();
  const [title, setTitle] = useState(editing?.card.title ?? '');
  const [flow, setFlow] = useState(editing?.card.flow ?? board.flows[0]?.name ?? '');
  const [workspace, setWorkspace] = useState<string>(editing?.workspace ?? '');
  const [command, setCommand] = useState(commandText(editing?.command));
  const [body, setBody] = useState(editing?.body ?? '# Task\n\n');
  const [schedule, setSchedule] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  const [picking, setPicking] = useState(false);
  // The form's answers may come in any order (a slow host): only the newest request's is used, and the
  // default workspace never replaces one the person chose meanwhile (picked or granted).
  const formAsked = useRef(0);
  const formShown = useRef(0);
  const wsChosen = useRef(false);
  const loadForm = useCallback(
    (then: (f: CardForm) => void): void => {
      const n = ++formAsked.current;
      api.cardForm().then(
        (f) => {
          if (n < formShown.current) return;
          formShown.current = n;
          setForm(f);
          then(f);
        },
        (e: Error) => setError(e.message),
      );
    },
    [api],
  );
  useEffect(() => {
    loadForm((f) => {
      if (wsChosen.current) return;
      // a new card works in the project folder when it is granted, else in the first granted folder
      if (!editing) {
        const project = f.workspaces.find((w) => w.path === f.projectDir);
        setWorkspace(project ? '' : (f.workspaces[0]?.path ?? ''));
      } else if (editing.workspace === f.projectDir) setWorkspace('');
    });
    first.current?.focus();
  }, [loadForm, editing]);
  const runner = board.flows.find((f) => f.name === flow)?.runner;
  const chooseWorkspace = (w: string): void => {
    wsChosen.current = true;
    setWorkspace(w);
  };
  const granted = (folder: string): void => {
    setPicking(false);
    wsChosen.current = true;
    loadForm((f) => setWorkspace(folder === f.projectDir ? '' : folder));
  };
  const ids = { title: useId(), flow: useId(), ws: useId(), cmd: useId(), body: useId(), sched: useId() };

  const save = (queue: boolean): void => {
    if (!title.trim()) return setError('Give the card a title.');
    if (runner === 'command' && !command.trim())
      return setError(`Flow ${flow} runs a command: give the command.`);
    const fields = {
      title,
      flow,
      ...(workspace ? { workspace } : {}),
      ...(parseCommand(command) !== undefined && runner === 'command'
        ? { command: parseCommand(command)! }
        : {}),
      body,
    };
    setBusy(true);
    const done = editing
      ? api.editCard({ id: editing.card.id, ...fields, baseBody: editing.body }).then(() => editing.card.id)
      : api
          .createCard({ ...fields, ...(schedule.trim() ? { schedule: { text: schedule } } : {}), queue })
          .then((r) => r.id);
    done.then(onSaved, (e: Error) => {
      setError(e.message);
      setBusy(false);
    });
  };

  // the folders offered: the granted ones, and the card's own when it is not (any more) granted
  const options =
    form?.workspaces.map((w) => ({ value: w.path === form.projectDir ? '' : w.path, label: w.label })) ?? [];
  if (workspace && form && !options.some((o) => o.value === workspace))
    options.push({ value: workspace, label: `${workspace} (not granted)` });
  if (form && !options.some((o) => o.value === ''))
    options.unshift({ value: '', label: '. (the project folder, not granted)' });

  return (
    <Modal
      label={editing ? `Edit card: ${editing.card.title}` : 'New card'}
      onClose={onClose}
      className="card-editor"
    >
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          save(false);
        }}
      >
        <div className="field">
          <label htmlFor={ids.title}>Title</label>
          <input
            id={ids.title}
            ref={first}
            value={title}
            onChange={(e) => setTitle(e.target.value)}
            required
          />
        </div>
        <div className="field-row">
          <div className="field">
            <label htmlFor={ids.flow}>Flow</label>
            <select id={ids.flow} value={flow} onChange={(e) => setFlow(e.target.value)}>
              {board.flows.map((f) => (
                <option key={f.name} value={f.name}>
                  {f.name} ({f.runner})
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={ids.ws}>Workspace</label>
            <div className="ws-row">
              <select id={ids.ws} value={workspace} onChange={(e) => chooseWorkspace(e.target.value)}>
                {options.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
              <button type="button" onClick={() => setPicking(true)}>
                Grant a folder…
              </button>
            </div>
          </div>
        </div>
        {runner === 'command' && (
          <div className="field">
            <label htmlFor={ids.cmd}>Command</label>
            <input
              id={ids.cmd}
              className="mono"
              value={command}
              placeholder="npm test"
              onChange={(e) => setCommand(e.target.value)}
            />
          </div>
        )}
        <div className="field">
          <label htmlFor={ids.body}>Task (markdown)</label>
          <textarea
            id={ids.body}
            className="mono"
            rows={12}
            value={body}
            onChange={(e) => setBody(e.target.value)}
          />
        </div>
        {!editing && (
          <div className="field">
            <label htmlFor={ids.sched}>Schedule (optional)</label>
            <input
              id={ids.sched}
              value={schedule}
              placeholder="every weekday at 9:00"
              onChange={(e) => setSchedule(e.target.value)}
            />
          </div>
        )}
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <div className="modal-actions">
          <button type="submit" className="primary" disabled={busy}>
            {editing ? 'Save' : 'Create in Backlog'}
          </button>
          {!editing && (
            <button type="button" disabled={busy} onClick={() => save(true)}>
              Create and queue
            </button>
          )}
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
      {picking && <FolderPicker api={api} onClose={() => setPicking(false)} onGranted={granted} />}
    </Modal>
  );
}

/**
 * A broken card: what is wrong with its file, its text to fix in place (when it is a regular file),
 * or the trash. Nothing of the file is lost: a save that still does not read stays a broken card.
 */
export function SourceEditor({
  api,
  id,
  error: parseError,
  onClose,
  onSaved,
  onTrash,
}: {
  api: BoardApi;
  id: string;
  error: string;
  onClose: () => void;
  onSaved: (id: string) => void;
  onTrash: () => void;
}) {
  const [src, setSrc] = useState<CardSource>();
  const [text, setText] = useState('');
  const [error, setError] = useState<string>();
  const textId = useId();
  useEffect(() => {
    api.cardSource({ id }).then(
      (s) => {
        setSrc(s);
        setText(s.text ?? '');
      },
      (e: Error) => setError(e.message),
    );
  }, [api, id]);
  return (
    <Modal
      label={`Broken card: ${src?.file ?? id.slice('broken:'.length)}`}
      onClose={onClose}
      className="source-editor"
    >
      <p className="form-error" role="alert">
        This file is not a card the board can read: {parseError}
      </p>
      {src?.text !== undefined ? (
        <div className="field">
          <label htmlFor={textId}>The file's text</label>
          <textarea
            id={textId}
            className="mono"
            rows={16}
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
        </div>
      ) : (
        src && (
          <p className="muted">
            Its text cannot be shown{src.error === parseError ? ' (see above)' : `: ${src.error}`}.
          </p>
        )
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <div className="modal-actions">
        {src?.text !== undefined && (
          <button
            type="button"
            className="primary"
            onClick={() =>
              void api.saveCardSource({ id, text, base: src.text! }).then(
                (r) => {
                  if (r.id) return onSaved(r.id);
                  // still no card: the new error shows above once the board has it
                  setSrc({ ...src, text });
                  setError('Saved, but the file still does not read as a card: see what is wrong above.');
                },
                (e: Error) => setError(e.message),
              )
            }
          >
            Save the file
          </button>
        )}
        <button type="button" className="danger" onClick={onTrash}>
          Move to trash
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </Modal>
  );
}
