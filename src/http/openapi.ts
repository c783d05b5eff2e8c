/**
 * An OpenAPI 3.1 document built from a route table (keel serve's and the hub's): path parameters from
 * `:name`, query parameters, the body's zod schema as JSON Schema, the success and error answers, and
 * the bearer token where the route needs one. Each API keeps its own table and says per route how it
 * answers; the document's shape is written once, here.
 */
import * as z from 'zod';

/** One route of an HTTP API, as its table lists it. */
export interface ApiRoute {
  method: 'get' | 'post';
  /** `:name` marks a path parameter. */
  path: string;
  summary: string;
  body?: z.ZodType;
  /** Query parameters: name → description. */
  query?: Record<string, string>;
  /** Answers with text/event-stream. */
  stream?: boolean;
  /** Request headers the route reads (a signature, a delivery id): name → description. */
  headers?: Record<string, string>;
  /** The body is taken as raw bytes (verified before it is parsed): what they must be. */
  rawBody?: string;
  /** The success answers, when the route says more than `success`: status → description. */
  answers?: Record<string, string>;
  /** The error codes the route answers with: code → HTTP status. */
  errors?: Record<string, number>;
}

/** The error answers of a route: one per status naming its codes, or a generic 4XX. */
function errorAnswers(errors: Record<string, number> | undefined): Record<string, unknown> {
  if (!errors) return { '4XX': { description: '{code, error}' } };
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(errors))
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  const out: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0]))
    out[String(status)] = {
      description: `{code, error}: ${codes.join(', ')}`,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['code', 'error'],
            properties: { code: { enum: codes }, error: { type: 'string' } },
          },
        },
      },
    };
  return out;
}

/** What the document says of a route beyond the table: its success status, whether it needs the token. */
export interface OperationFacts {
  success: '2XX' | '200';
  bearer: boolean;
  /** Vendor fields (`x-…`), written right after the summary. */
  extensions?: Record<string, unknown>;
}

export function buildOpenApiDocument<R extends ApiRoute>(
  info: { title: string; version: string; description?: string },
  routes: readonly R[],
  facts: (route: R) => OperationFacts,
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const { success, bearer, extensions } = facts(r);
    const path = r.path.replace(/:([a-z]+)/g, '{$1}');
    const params = [...r.path.matchAll(/:([a-z]+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const query = Object.entries(r.query ?? {}).map(([name, description]) => ({
      name,
      in: 'query',
      required: false,
      description,
      schema: { type: 'string' },
    }));
    const headers = Object.entries(r.headers ?? {}).map(([name, description]) => ({
      name,
      in: 'header',
      required: false,
      description,
      schema: { type: 'string' },
    }));
    paths[path] ??= {};
    (paths[path] as Record<string, unknown>)[r.method] = {
      summary: r.summary,
      ...extensions,
      ...(params.length || query.length || headers.length
        ? { parameters: [...params, ...query, ...headers] }
        : {}),
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': {
                  schema: z.toJSONSchema(r.body, { io: 'input', target: 'draft-2020-12' }),
                },
              },
            },
          }
        : r.rawBody
          ? {
              requestBody: {
                required: true,
                description: r.rawBody,
                content: { 'application/json': { schema: { type: 'object' } } },
              },
            }
          : {}),
      responses: {
        ...(r.answers
          ? Object.fromEntries(
              Object.entries(r.answers).map(([status, description]) => [status, { description }]),
            )
          : { [success]: { description: r.stream ? 'text/event-stream' : 'application/json' } }),
        ...errorAnswers(r.errors),
      },
      ...(bearer ? { security: [{ bearer: [] }] } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info,
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
