// The built console holds several copies of http.ts (Next.js bundles it into each route chunk, and the launcher
// imports its own): an HttpError thrown by one copy reaches code that imported another, so it is not an instance
// of the class that code knows. This class is such a copy for the tests: same name and shape, another class.
export class HttpErrorCopy extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    error: string,
    readonly detail: string,
  ) {
    super(error);
  }
}
