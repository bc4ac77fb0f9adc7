// Pets: the inventory as three figures, a table that pages with the API's cursor and
// filters by status, and add, edit (If-Match: the version the form was opened on) and delete.
import { useEffect, useState } from 'preact/hooks'
import type { Inventory, Page, Pet, PetStatus } from '../api.js'
import { ActionButton, ErrorNote, missingScope, NeedsScope, Outcome, Pager, StatusFilter, useCursors, useSession } from '../ui.js'

const STATUSES: PetStatus[] = ['available', 'pending', 'sold']

export function Pets() {
  // Bumped by every change made here, so that the inventory is read again.
  const [changes, setChanges] = useState(0)
  return (
    <NeedsScope operation="listPets">
      <InventoryFigures changes={changes} />
      <PetList onChanged={() => setChanges((n) => n + 1)} />
    </NeedsScope>
  )
}

function InventoryFigures({ changes }: { changes: number }) {
  const { api } = useSession()
  const [inventory, setInventory] = useState<Inventory>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    api.getInventory().then(setInventory, setError)
  }, [changes])
  return (
    <section aria-labelledby="inventory">
      <h2 id="inventory">Inventory</h2>
      <ErrorNote error={error} />
      {inventory && (
        <dl class="figures">
          {STATUSES.map((status) => (
            <div key={status}>
              <dt>{status}</dt>
              <dd data-testid={`inventory-${status}`}>{inventory[status]}</dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  )
}

function PetList({ onChanged }: { onChanged: () => void }) {
  const session = useSession()
  const { api } = session
  const [status, setStatus] = useState<PetStatus | ''>('')
  const pages = useCursors()
  const { cursor, reset } = pages
  const [page, setPage] = useState<Page<Pet>>()
  const [error, setError] = useState<unknown>()
  const [done, setDone] = useState<string>()
  const [editing, setEditing] = useState<{ pet: Pet; etag: string }>()
  const [confirming, setConfirming] = useState<number>()

  const load = async () => {
    try {
      setPage(await api.listPets({ status: status || undefined, cursor, limit: 20 }))
      setError(undefined)
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [status, cursor])

  const act = async (what: () => Promise<unknown>, message: string) => {
    try {
      await what()
      onChanged()
      // The list first, then the message: what it says is on the page when it shows.
      await load()
      setDone(message)
      setError(undefined)
    } catch (failure) {
      setDone(undefined)
      setError(failure)
    }
  }

  return (
    <section aria-labelledby="pets">
      <h2 id="pets">Pets</h2>
      <AddPet onAdded={(pet) => act(async () => pet, `Added ${pet.name} (id ${pet.id}).`)} />
      <StatusFilter
        statuses={STATUSES}
        value={status}
        onChange={(next) => {
          setStatus(next)
          reset()
        }}
      />
      <Outcome done={done} error={error} />
      {editing && (
        <EditPet
          version={editing}
          onClose={() => setEditing(undefined)}
          onSaved={(pet) => {
            setEditing(undefined)
            void act(async () => pet, `Saved ${pet.name}.`)
          }}
        />
      )}
      <table>
        <caption class="note">{page ? `${page.items.length} ${page.items.length === 1 ? 'pet' : 'pets'} on this page` : 'Loading…'}</caption>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Name</th>
            <th scope="col">Category</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {page?.items.map((pet) => (
            <tr key={pet.id} data-pet-id={pet.id}>
              <td>{pet.id}</td>
              <td class="pet-name">{pet.name}</td>
              <td>{pet.categoryId}</td>
              <td>{pet.status}</td>
              <td>
                <ActionButton
                  operation="updatePet"
                  label={`Edit ${pet.name}`}
                  onClick={async () => {
                    try {
                      setEditing(await api.readPet(pet.id))
                    } catch (failure) {
                      setError(failure)
                    }
                  }}
                >
                  Edit
                </ActionButton>{' '}
                {confirming === pet.id ? (
                  <ActionButton operation="deletePet" label={`Really delete ${pet.name}`} onClick={() => act(() => api.deletePet(pet.id), `Deleted ${pet.name}.`)}>
                    Really delete?
                  </ActionButton>
                ) : (
                  <ActionButton operation="deletePet" label={`Delete ${pet.name}`} onClick={() => setConfirming(pet.id)}>
                    Delete
                  </ActionButton>
                )}{' '}
                {pet.status === 'available' && (
                  <ActionButton operation="placeOrder" label={`Reserve ${pet.name}`} onClick={() => act(() => api.placeOrder(pet.id), `Reserved ${pet.name}: see Orders.`)}>
                    Reserve
                  </ActionButton>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="Pages of pets" class="pager" pages={pages} nextCursor={page?.nextCursor} />
      {missingScope(session, 'createPet') === undefined ? null : <p class="note">Adding, editing and deleting pets needs the pets:write scope.</p>}
    </section>
  )
}

function AddPet({ onAdded }: { onAdded: (pet: Pet) => void }) {
  const session = useSession()
  const [name, setName] = useState('')
  const [categoryId, setCategoryId] = useState('1')
  const [error, setError] = useState<unknown>()
  const missing = missingScope(session, 'createPet')
  return (
    <form
      aria-label="Add a pet"
      onSubmit={async (event) => {
        event.preventDefault()
        try {
          const pet = await session.api.createPet({ name, categoryId: Number(categoryId) })
          setName('')
          setError(undefined)
          onAdded(pet)
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label>
        Name
        <input value={name} required maxLength={200} disabled={missing !== undefined} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Category id
        <input type="number" min={1} value={categoryId} required disabled={missing !== undefined} onInput={(e) => setCategoryId(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={missing !== undefined} title={missing && `Needs the ${missing} scope`}>
        Add pet{missing && <span class="needs"> (needs {missing})</span>}
      </button>
      <ErrorNote error={error} />
    </form>
  )
}

function EditPet({ version, onClose, onSaved }: { version: { pet: Pet; etag: string }; onClose: () => void; onSaved: (pet: Pet) => void }) {
  const { api } = useSession()
  const [name, setName] = useState(version.pet.name)
  const [categoryId, setCategoryId] = useState(String(version.pet.categoryId))
  const [status, setStatus] = useState<PetStatus>(version.pet.status)
  const [error, setError] = useState<unknown>()
  return (
    <form
      aria-label={`Edit pet ${version.pet.id}`}
      class="edit"
      onSubmit={async (event) => {
        event.preventDefault()
        try {
          onSaved(await api.updatePet(version.pet.id, { name, categoryId: Number(categoryId), status }, version.etag))
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label>
        Name
        <input value={name} required maxLength={200} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Category id
        <input type="number" min={1} value={categoryId} required onInput={(e) => setCategoryId(e.currentTarget.value)} />
      </label>
      <label>
        Status
        <select value={status} onChange={(e) => setStatus(e.currentTarget.value as PetStatus)}>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <button type="submit">Save</button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
      <ErrorNote error={error} />
    </form>
  )
}
