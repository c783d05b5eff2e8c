import { describe, expect, it } from 'vitest';
import { type Definition, extract } from '../../src/graph/extract.js';
import { languageOf } from '../../src/graph/queries.js';

const def = (defs: Definition[], name: string, parent?: string) =>
  defs.find((d) => d.name === name && (parent === undefined || d.parent === parent));
const refNames = (refs: Array<{ name: string }>) => new Set(refs.map((r) => r.name));

describe('extraction per language', () => {
  it('TypeScript: functions, classes with methods, interfaces, types, enums, arrow functions; imports; refs', async () => {
    const src = [
      "import { helper } from './util.js';",
      "export * from './types';",
      "const fs = require('node:fs');",
      'export function load(path: string): Config {',
      '  return helper(path);',
      '}',
      'export class Loader extends Base implements Source {',
      '  read(key: string) {',
      '    return new Parser().parse(key);',
      '  }',
      '}',
      'interface Source { read(key: string): string }',
      'type Config = { a: number };',
      'enum Level { Low, High }',
      'export const twice = (n: number) => n * 2;',
    ].join('\n');
    const { defs, imports, refs } = await extract('typescript', src);
    expect(def(defs, 'load')).toMatchObject({
      kind: 'function',
      signature: 'export function load(path: string): Config {',
      startLine: 4,
      endLine: 6,
    });
    expect(def(defs, 'Loader')).toMatchObject({ kind: 'class', startLine: 7, endLine: 11 });
    expect(def(defs, 'read', 'Loader')).toMatchObject({ kind: 'method', startLine: 8, endLine: 10 });
    expect(def(defs, 'Source')?.kind).toBe('interface');
    expect(def(defs, 'Config')?.kind).toBe('type');
    expect(def(defs, 'Level')?.kind).toBe('enum');
    expect(def(defs, 'twice')).toMatchObject({ kind: 'function', startLine: 15 });
    expect(imports).toEqual(['./util.js', './types', 'node:fs']);
    const names = refNames(refs);
    for (const n of ['helper', 'Parser', 'parse', 'Config', 'Base', 'Source']) expect(names).toContain(n);
    // a definition's own name is not a reference to it
    expect(refs.filter((r) => r.name === 'Loader')).toEqual([]);
    expect(refs.find((r) => r.name === 'helper')?.line).toBe(5);
  });

  it('TSX parses JSX files with the TypeScript queries', async () => {
    const { defs, refs } = await extract(
      'tsx',
      'export function App(): JSX.Element {\n  return <div>{render()}</div>;\n}\n',
    );
    expect(def(defs, 'App')).toMatchObject({ kind: 'function', startLine: 1, endLine: 3 });
    expect(refNames(refs)).toContain('render');
  });

  it('JavaScript: functions, classes, methods, function expressions; import and require', async () => {
    const src =
      "import x from 'lib';\nconst y = require('./y');\nfunction f() { g(); }\nclass C extends B { m() { f(); } }\nconst h = function () {};\n";
    const { defs, imports, refs } = await extract('javascript', src);
    expect(def(defs, 'f')).toMatchObject({
      kind: 'function',
      startLine: 3,
      signature: 'function f() { g(); }',
    });
    expect(def(defs, 'C')?.kind).toBe('class');
    expect(def(defs, 'm', 'C')?.kind).toBe('method');
    expect(def(defs, 'h')?.kind).toBe('function');
    expect(imports).toEqual(['lib', './y']);
    expect([...refNames(refs)]).toEqual(expect.arrayContaining(['g', 'f', 'B']));
  });

  it('Python: functions, classes and their methods; import forms; calls and annotations', async () => {
    const src = [
      'import os',
      'import pkg.sub as alias',
      'from .models import User',
      'from app.db import session',
      '',
      'class Repo(Base):',
      '    def get(self, key: Key) -> User:',
      '        return fetch(key)',
      '',
      'def main():',
      '    Repo().get(1)',
    ].join('\n');
    const { defs, imports, refs } = await extract('python', src);
    expect(def(defs, 'Repo')).toMatchObject({
      kind: 'class',
      signature: 'class Repo(Base):',
      startLine: 6,
      endLine: 8,
    });
    expect(def(defs, 'get')).toMatchObject({ kind: 'method', parent: 'Repo', startLine: 7, endLine: 8 });
    expect(def(defs, 'main')).toMatchObject({ kind: 'function', startLine: 10, endLine: 11 });
    expect(imports).toEqual(['os', 'pkg.sub', '.models', 'app.db']);
    expect([...refNames(refs)]).toEqual(
      expect.arrayContaining(['Base', 'Key', 'User', 'fetch', 'Repo', 'get']),
    );
  });

  it('Go: functions, methods with their receiver, structs, interfaces; imports; calls and types', async () => {
    const src = [
      'package server',
      '',
      'import (',
      '  "fmt"',
      '  "example.com/app/store"',
      ')',
      '',
      'type Server struct {',
      '  db store.DB',
      '}',
      '',
      'type Handler interface { Serve() error }',
      '',
      'func (s *Server) Start() error {',
      '  fmt.Println(version())',
      '  return nil',
      '}',
      '',
      'func version() string { return "1" }',
    ].join('\n');
    const { defs, imports, refs } = await extract('go', src);
    expect(def(defs, 'Server')).toMatchObject({ kind: 'struct', startLine: 8, endLine: 10 });
    expect(def(defs, 'Handler')?.kind).toBe('interface');
    expect(def(defs, 'Start')).toMatchObject({
      kind: 'method',
      parent: 'Server',
      signature: 'func (s *Server) Start() error {',
      startLine: 14,
      endLine: 17,
    });
    expect(def(defs, 'version')?.kind).toBe('function');
    expect(imports).toEqual(['fmt', 'example.com/app/store']);
    expect([...refNames(refs)]).toEqual(expect.arrayContaining(['Println', 'version', 'Server', 'DB']));
  });

  it('Rust: functions, structs, enums, traits, impl methods with their type; use; calls and macros', async () => {
    const src = [
      'use std::collections::HashMap;',
      'use crate::geo::{Point, area};',
      '',
      'pub struct Circle { r: f64 }',
      'pub enum Shape { Round(Circle) }',
      'pub trait Area { fn area(&self) -> f64; }',
      'impl Circle {',
      '    pub fn new(r: f64) -> Self {',
      '        check(r);',
      '        Circle { r }',
      '    }',
      '}',
      'impl<T> Area for Wrapper<T> { fn area(&self) -> f64 { 0.0 } }',
      'fn check(r: f64) { println!("{}", r); }',
    ].join('\n');
    const { defs, imports, refs } = await extract('rust', src);
    expect(def(defs, 'Circle')).toMatchObject({ kind: 'struct', startLine: 4 });
    expect(def(defs, 'Shape')?.kind).toBe('enum');
    expect(def(defs, 'Area')?.kind).toBe('trait');
    expect(def(defs, 'area', 'Area')?.kind).toBe('method');
    expect(def(defs, 'area', 'Wrapper')?.kind).toBe('method');
    expect(def(defs, 'new')).toMatchObject({ kind: 'method', parent: 'Circle', startLine: 8, endLine: 11 });
    expect(def(defs, 'check')).toMatchObject({
      kind: 'function',
      signature: 'fn check(r: f64) { println!("{}", r); }',
    });
    expect(imports).toEqual(['std::collections::HashMap', 'crate::geo::{Point, area}']);
    expect([...refNames(refs)]).toEqual(expect.arrayContaining(['check', 'println', 'Circle', 'Wrapper']));
  });

  it('Java: classes, interfaces, enums, methods and constructors; imports; invocations and types', async () => {
    const src = [
      'package app;',
      'import java.util.List;',
      'import com.acme.Store;',
      '',
      'public class Service extends Base {',
      '  public Service() {}',
      '  public int run(List<String> xs) {',
      '    return helper(new Store());',
      '  }',
      '}',
      'interface Job { void go(); }',
      'enum Mode { ON, OFF }',
    ].join('\n');
    const { defs, imports, refs } = await extract('java', src);
    expect(def(defs, 'Service', undefined)).toMatchObject({ kind: 'class', startLine: 5, endLine: 10 });
    expect(def(defs, 'run')).toMatchObject({
      kind: 'method',
      parent: 'Service',
      signature: 'public int run(List<String> xs) {',
      startLine: 7,
      endLine: 9,
    });
    expect(def(defs, 'Job')?.kind).toBe('interface');
    expect(def(defs, 'go', 'Job')?.kind).toBe('method');
    expect(def(defs, 'Mode')?.kind).toBe('enum');
    expect(imports).toEqual(['java.util.List', 'com.acme.Store']);
    expect([...refNames(refs)]).toEqual(expect.arrayContaining(['helper', 'Store', 'List', 'Base']));
  });

  it('signatures are one trimmed line, capped; a file that does not parse cleanly still yields what it can', async () => {
    const long = `function wide(${Array.from({ length: 60 }, (_, i) => `a${i}: number`).join(', ')}) {}\n`;
    const { defs } = await extract('typescript', long);
    expect(def(defs, 'wide')?.signature.length).toBeLessThanOrEqual(160);
    expect(def(defs, 'wide')?.signature.endsWith('…')).toBe(true);
    const broken = await extract('python', 'def ok():\n    pass\n\ndef broken(:\n');
    expect(def(broken.defs, 'ok')).toBeDefined();
  });

  it('languages by extension', () => {
    expect(languageOf('src/a.ts')).toBe('typescript');
    expect(languageOf('src/a.tsx')).toBe('tsx');
    expect(languageOf('a.mjs')).toBe('javascript');
    expect(languageOf('x/y.py')).toBe('python');
    expect(languageOf('main.go')).toBe('go');
    expect(languageOf('lib.rs')).toBe('rust');
    expect(languageOf('A.java')).toBe('java');
    expect(languageOf('README.md')).toBeUndefined();
    expect(languageOf('dir.ts/file')).toBeUndefined();
  });
});
