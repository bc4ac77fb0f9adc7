import { Type } from 'typebox'
import { ERROR_CODES } from '../errors.js'

export const ErrorSchema = Type.Object(
  {
    code: Type.Unsafe<string>({ type: 'string', enum: ERROR_CODES, description: 'Machine-readable error code.' }),
    message: Type.String({ description: 'What is wrong, in words a client developer can act on, naming the field or parameter at fault.' }),
    status: Type.Integer({ description: 'The HTTP status code, repeated.' }),
    details: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String({ description: 'The body field, query parameter or path parameter at fault.' }),
          message: Type.String(),
        }),
        { description: 'Each problem found, when there is more than one place to look.' },
      ),
    ),
  },
  { $id: 'Error', description: 'Every error response of every operation has this body.' },
)
