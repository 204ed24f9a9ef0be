// A TypeScript file emitted with ts-morph, as the package's TypeScript files are: two-space
// indentation, single quotes, exported constants whose initializers are written as text.

import { IndentationText, Project, QuoteKind, VariableDeclarationKind, type SourceFile } from 'ts-morph';

export function tsFile(name: string): { file: SourceFile; constant: (name: string, type: string, initializer: string) => void } {
  const project = new Project({ useInMemoryFileSystem: true, manipulationSettings: { indentationText: IndentationText.TwoSpaces, quoteKind: QuoteKind.Single } });
  const file = project.createSourceFile(name);
  const constant = (n: string, type: string, initializer: string) => {
    file.addVariableStatement({ isExported: true, declarationKind: VariableDeclarationKind.Const, declarations: [{ name: n, type, initializer }] });
  };
  return { file, constant };
}
