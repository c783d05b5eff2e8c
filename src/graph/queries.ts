/**
 * The tree-sitter queries per language: `@def.KIND` on a definition with `@name` on its name,
 * `@scope` / `@scope.name` on a block whose definitions belong to a type (a Rust impl),
 * `@parent` on a Go method's receiver type, `@import` on a module specifier, `@ref` on a name used.
 */

const TS_COMMON = `
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: (property_identifier) @name) @def.method
(lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)])) @def.function
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @require arguments: (arguments (string (string_fragment) @import)))
(call_expression function: (identifier) @ref)
(call_expression function: (member_expression property: (property_identifier) @ref))
(new_expression constructor: (identifier) @ref)
`;

const TYPESCRIPT = `${TS_COMMON}
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(abstract_method_signature name: (property_identifier) @name) @def.method
(type_identifier) @ref
(extends_clause value: (identifier) @ref)
`;

const JAVASCRIPT = `${TS_COMMON}
(class_declaration name: (identifier) @name) @def.class
(class_heritage (identifier) @ref)
`;

const PYTHON = `
(function_definition name: (identifier) @name) @def.function
(class_definition name: (identifier) @name) @def.class
(import_statement name: (dotted_name) @import)
(import_statement name: (aliased_import name: (dotted_name) @import))
(import_from_statement module_name: (dotted_name) @import)
(import_from_statement module_name: (relative_import) @import)
(call function: (identifier) @ref)
(call function: (attribute attribute: (identifier) @ref))
(type (identifier) @ref)
(argument_list (identifier) @ref)
(class_definition superclasses: (argument_list (identifier) @ref))
`;

const GO = `
(function_declaration name: (identifier) @name) @def.function
(method_declaration receiver: (parameter_list (parameter_declaration type: (type_identifier) @parent)) name: (field_identifier) @name) @def.method
(method_declaration receiver: (parameter_list (parameter_declaration type: (pointer_type (type_identifier) @parent))) name: (field_identifier) @name) @def.method
(type_declaration (type_spec name: (type_identifier) @name type: (struct_type))) @def.struct
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type))) @def.interface
(import_spec path: (interpreted_string_literal) @import)
(call_expression function: (identifier) @ref)
(call_expression function: (selector_expression field: (field_identifier) @ref))
(type_identifier) @ref
`;

const RUST = `
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(trait_item name: (type_identifier) @name) @def.trait
(impl_item type: (type_identifier) @scope.name) @scope
(impl_item type: (generic_type type: (type_identifier) @scope.name)) @scope
(use_declaration argument: (_) @import)
(call_expression function: (identifier) @ref)
(call_expression function: (scoped_identifier name: (identifier) @ref))
(call_expression function: (field_expression field: (field_identifier) @ref))
(macro_invocation macro: (identifier) @ref)
(type_identifier) @ref
`;

const JAVA = `
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(import_declaration (scoped_identifier) @import)
(method_invocation name: (identifier) @ref)
(object_creation_expression type: (type_identifier) @ref)
(type_identifier) @ref
`;

export type LanguageId = 'typescript' | 'tsx' | 'javascript' | 'python' | 'go' | 'rust' | 'java';

export interface LanguageSpec {
  id: LanguageId;
  /** The grammar's file in tree-sitter-wasms/out. */
  wasm: string;
  query: string;
}

export const LANGUAGES: Record<LanguageId, LanguageSpec> = {
  typescript: { id: 'typescript', wasm: 'tree-sitter-typescript.wasm', query: TYPESCRIPT },
  tsx: { id: 'tsx', wasm: 'tree-sitter-tsx.wasm', query: TYPESCRIPT },
  javascript: { id: 'javascript', wasm: 'tree-sitter-javascript.wasm', query: JAVASCRIPT },
  python: { id: 'python', wasm: 'tree-sitter-python.wasm', query: PYTHON },
  go: { id: 'go', wasm: 'tree-sitter-go.wasm', query: GO },
  rust: { id: 'rust', wasm: 'tree-sitter-rust.wasm', query: RUST },
  java: { id: 'java', wasm: 'tree-sitter-java.wasm', query: JAVA },
};

const EXTENSIONS: Record<string, LanguageId> = {
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'tsx',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  py: 'python',
  go: 'go',
  rs: 'rust',
  java: 'java',
};

/** The language of a file by its extension, or undefined for a file the graph does not read. */
export function languageOf(path: string): LanguageId | undefined {
  if (path.endsWith('.d.ts')) return 'typescript';
  const dot = path.lastIndexOf('.');
  if (dot < 0 || dot < path.lastIndexOf('/')) return undefined;
  return EXTENSIONS[path.slice(dot + 1).toLowerCase()];
}
