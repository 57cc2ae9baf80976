/**
 * SCIM discovery (RFC 7644 §4) under each directory's SCIM base: `/ServiceProviderConfig`,
 * `/Schemas` (and `/Schemas/{urn}`), `/ResourceTypes` (and `/ResourceTypes/{User|Group}`), GET
 * only, behind the directory's bearer secret like the rest of its SCIM endpoint. Neither Jackson
 * nor Hydra serves them; SCIM validators and some identity providers read them.
 *
 * The documents say what the endpoint does, and test/http/dsync/scim-discovery.test.ts holds each
 * claim against the routes: PATCH yes; bulk, sort, ETags and password changes no; filters yes (any
 * attribute, `and`/`or`/`not`, value paths), at most `maxResults` resources per page (the page
 * limit); one authentication scheme, the bearer secret (RFC 6750). The schemas describe the
 * attributes gatehouse reads from a resource (RFC 7643 §4.1, §4.2): the rest of what a client
 * sends is kept and returned as it was sent.
 */
import { ENTERPRISE_USER } from '../enterprise.ts';
import { scimError } from '../errors.ts';
import { LIST_RESPONSE } from './users.ts';

const CORE = 'urn:ietf:params:scim:schemas:core:2.0';
export const USER_SCHEMA = `${CORE}:User`;
export const GROUP_SCHEMA = `${CORE}:Group`;
const SCHEMA_SCHEMA = `${CORE}:Schema`;
const RESOURCE_TYPE_SCHEMA = `${CORE}:ResourceType`;
const CONFIG_SCHEMA = `${CORE}:ServiceProviderConfig`;

/** The discovery resource types, by the lower-case name of their path segment. */
export type DiscoveryKind = 'serviceproviderconfig' | 'schemas' | 'resourcetypes';
export const DISCOVERY_KINDS: ReadonlySet<string> = new Set(['serviceproviderconfig', 'schemas', 'resourcetypes']);

interface Attribute {
  name: string;
  type: 'string' | 'boolean' | 'complex' | 'reference';
  multiValued: boolean;
  description: string;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: 'always' | 'default' | 'never' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: Attribute[];
  canonicalValues?: string[];
  referenceTypes?: string[];
}

const attr = (
  name: string,
  description: string,
  o: Partial<Omit<Attribute, 'name' | 'description'>> = {},
): Attribute => ({
  name,
  type: 'string',
  multiValued: false,
  description,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...o,
});

const USER_ATTRIBUTES: Attribute[] = [
  attr('userName', 'Unique within the directory, case-insensitively, together with the primary email.', {
    required: true,
    uniqueness: 'server',
  }),
  attr('name', "The user's name: givenName and familyName are the user record's first_name and last_name.", {
    type: 'complex',
    subAttributes: [
      attr('givenName', 'First name (first_name of the user record and its events).'),
      attr('familyName', 'Last name (last_name of the user record and its events).'),
      attr('formatted', 'The full name, kept as sent.'),
    ],
  }),
  attr('emails', "Email addresses; the primary one (or the first) is the user record's email.", {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', 'The address.'),
      attr('type', 'work, home or other.', { canonicalValues: ['work', 'home', 'other'] }),
      attr('primary', 'The address the user record takes.', { type: 'boolean' }),
    ],
  }),
  attr('active', 'Whether the user is active (active of the user record).', { type: 'boolean' }),
  attr('password', 'Accepted and discarded: never stored nor returned.', {
    mutability: 'writeOnly',
    returned: 'never',
  }),
  attr('roles', "Roles, kept as sent and carried in the user's events.", {
    type: 'complex',
    multiValued: true,
    subAttributes: [attr('value', 'The role.'), attr('display', 'A label.'), attr('type', 'A label.')],
  }),
  attr(
    'groups',
    'Groups of the directory to join, by id, on POST and PUT (kept as sent); a membership is never removed for missing here: leaving a group is a Group write.',
    {
      type: 'complex',
      multiValued: true,
      subAttributes: [
        attr('value', 'The id of a group of the directory.', { caseExact: true }),
        attr('display', 'A label, not read.'),
      ],
    },
  ),
];

const ENTERPRISE_ATTRIBUTES: Attribute[] = [
  attr('employeeNumber', 'employee_number of the user record and its events; filterable (case-exact).'),
  attr('costCenter', 'cost_center of the user record and its events; filterable.'),
  attr('organization', 'organization of the user record and its events; filterable.'),
  attr('division', 'division of the user record and its events; filterable.'),
  attr('department', 'department of the user record and its events; filterable.'),
  attr('manager', "The user's manager: value is manager_id of the user record and its events; filterable.", {
    type: 'complex',
    subAttributes: [
      attr('value', 'The id of the manager.', { caseExact: true }),
      attr('displayName', 'A label, kept as sent.'),
    ],
  }),
];

const GROUP_ATTRIBUTES: Attribute[] = [
  attr('displayName', 'Unique within the directory, case-insensitively.', { required: true, uniqueness: 'server' }),
  attr('members', 'The members: users of the directory, by id.', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', 'The id of a user of the directory.', { caseExact: true, mutability: 'immutable' }),
      attr('display', 'A label, not kept.', { mutability: 'immutable' }),
    ],
  }),
];

function schemas(base: string) {
  const doc = (id: string, name: string, description: string, attributes: Attribute[]) => ({
    schemas: [SCHEMA_SCHEMA],
    id,
    name,
    description,
    attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${id}` },
  });
  return [
    doc(USER_SCHEMA, 'User', 'User accounts of the directory.', USER_ATTRIBUTES),
    doc(
      ENTERPRISE_USER,
      'EnterpriseUser',
      'The enterprise extension of a user (RFC 7643 §4.3).',
      ENTERPRISE_ATTRIBUTES,
    ),
    doc(GROUP_SCHEMA, 'Group', 'Groups of the directory.', GROUP_ATTRIBUTES),
  ];
}

function resourceTypes(base: string) {
  const doc = (id: string, endpoint: string, description: string, schema: string, extensions: string[] = []) => ({
    schemas: [RESOURCE_TYPE_SCHEMA],
    id,
    name: id,
    endpoint,
    description,
    schema,
    schemaExtensions: extensions.map((x) => ({ schema: x, required: false })),
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${id}` },
  });
  return [
    doc('User', '/Users', 'User accounts of the directory.', USER_SCHEMA, [ENTERPRISE_USER]),
    doc('Group', '/Groups', 'Groups of the directory.', GROUP_SCHEMA),
  ];
}

function serviceProviderConfig(base: string, maxResults: number) {
  return {
    schemas: [CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer secret',
        description: "The directory's SCIM secret as a bearer token: Authorization: Bearer <secret>.",
        specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

const list = (items: unknown[]) => ({
  schemas: [LIST_RESPONSE],
  totalResults: items.length,
  itemsPerPage: items.length,
  startIndex: 1,
  Resources: items,
});

/**
 * The answer to a discovery request. `base` is the directory's SCIM base URL, `maxResults` the
 * page limit of its lists. Throws SCIM errors: 405 for another method than GET, 404 for an unknown id.
 */
export function discovery(
  kind: DiscoveryKind,
  method: string,
  id: string | undefined,
  base: string,
  maxResults: number,
): { status: number; data: unknown } {
  if (method !== 'GET') throw scimError(405, 'Discovery resources are read with GET.');
  if (kind === 'serviceproviderconfig') {
    if (id !== undefined) throw scimError(404, 'Resource not found');
    return { status: 200, data: serviceProviderConfig(base, maxResults) };
  }
  const all: Array<{ id: string }> = kind === 'schemas' ? schemas(base) : resourceTypes(base);
  if (id === undefined) return { status: 200, data: list(all) };
  const one = all.find((x) => x.id === id);
  if (!one) throw scimError(404, kind === 'schemas' ? `Schema ${id} not found` : `Resource type ${id} not found`);
  return { status: 200, data: one };
}
