/** A request to the world that cannot be done; `status` is the control API's HTTP status. */
export class WorldError {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly message: string,
  ) {}
}
