import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { candidateNames, importVideo, VideoImportRefused, videoFileName } from './video-import.ts';

let root: string;
let project: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-video-import-'));
  project = path.join(root, 'project');
  mkdirSync(project);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const bytes = (n: number, fill = 7): Buffer => Buffer.alloc(n, fill);
const videos = (): string[] => readdirSync(path.join(project, 'videos')).sort();

describe('videoFileName', () => {
  it('keeps a plain name and makes anything else safe', () => {
    expect(videoFileName('demo.mp4')).toBe('demo.mp4');
    expect(videoFileName('Demo Clip (1).MP4')).toBe('Demo-Clip-1.mp4');
    expect(videoFileName('../../etc/passwd.mp4')).toBe('passwd.mp4');
    expect(videoFileName('C:\\Users\\x\\screen.mp4')).toBe('screen.mp4');
    expect(videoFileName('.hidden.mp4')).toBe('hidden.mp4');
    expect(videoFileName('….mp4')).toBe('video.mp4');
    expect(videoFileName(`${'a'.repeat(300)}.mp4`)).toBe(`${'a'.repeat(80)}.mp4`);
  });
  it('numbers a name that is taken', () => {
    const it = candidateNames('demo.mp4');
    expect([it.next().value, it.next().value, it.next().value]).toEqual([
      'demo.mp4',
      'demo-2.mp4',
      'demo-3.mp4',
    ]);
  });
});

describe('importVideo', () => {
  it('writes every byte into videos/, never over a file already there, and leaves no temporary', async () => {
    const a = await importVideo(project, 'demo.mp4', Readable.from([bytes(1000, 1), bytes(500, 2)]), {
      maxBytes: 10_000,
      declared: 1500,
    });
    const b = await importVideo(project, 'demo.mp4', Readable.from([bytes(10, 3)]), { maxBytes: 10_000 });
    expect(a).toBe(path.join(project, 'videos', 'demo.mp4'));
    expect(b).toBe(path.join(project, 'videos', 'demo-2.mp4'));
    expect(readFileSync(a)).toEqual(Buffer.concat([bytes(1000, 1), bytes(500, 2)]));
    expect(readFileSync(b)).toEqual(bytes(10, 3));
    expect(videos()).toEqual(['demo-2.mp4', 'demo.mp4']);
  });

  it('refuses a declared size over the limit before reading, and a body that grows past it', async () => {
    await expect(
      importVideo(project, 'big.mp4', Readable.from([bytes(10)]), { maxBytes: 100, declared: 3 * 1024 ** 3 }),
    ).rejects.toThrow(/big\.mp4 is 3\.00 GB, over the 0 GB limit/);
    await expect(
      importVideo(project, 'big.mp4', Readable.from([bytes(60), bytes(60)]), { maxBytes: 100 }),
    ).rejects.toBeInstanceOf(VideoImportRefused);
    expect(videos()).toEqual([]);
  });

  it('keeps nothing of an upload that broke off or arrived cut short', async () => {
    const broken = new Readable({
      read() {
        this.push(bytes(100));
        this.destroy(new Error('aborted'));
      },
    });
    await expect(importVideo(project, 'x.mp4', broken, { maxBytes: 10_000 })).rejects.toThrow('aborted');
    await expect(
      importVideo(project, 'x.mp4', Readable.from([bytes(100)]), { maxBytes: 10_000, declared: 200 }),
    ).rejects.toThrow(/cut short \(100 of 200 bytes\)/);
    await expect(importVideo(project, 'x.mp4', Readable.from([]), { maxBytes: 10_000 })).rejects.toThrow(
      /arrived empty/,
    );
    expect(videos()).toEqual([]);
  });

  it('does not write through a `videos` link that something in the project put there', async () => {
    const elsewhere = path.join(root, 'elsewhere');
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, path.join(project, 'videos'));
    await expect(
      importVideo(project, 'x.mp4', Readable.from([bytes(10)]), { maxBytes: 10_000 }),
    ).rejects.toThrow(/is not a folder of the project \(a link or a file has its name\)/);
    expect(readdirSync(elsewhere)).toEqual([]);
    rmSync(path.join(project, 'videos'));
    writeFileSync(path.join(project, 'videos'), 'a file');
    await expect(
      importVideo(project, 'x.mp4', Readable.from([bytes(10)]), { maxBytes: 10_000 }),
    ).rejects.toBeInstanceOf(VideoImportRefused);
  });
});
