-- gatehouse:required-by-code
-- Group memberships are kept when the member is not (yet) a user of the directory: an identity
-- provider may push a group before the users it contains, and Jackson keeps such memberships
-- (its members listing returns them). The membership no longer needs its user row; deleting a user
-- still removes its memberships (the code does it in the same statement batch).
ALTER TABLE dsync_group_members DROP CONSTRAINT dsync_group_members_directory_id_user_id_fkey;

-- gatehouse:down
DELETE FROM dsync_group_members m
  WHERE NOT EXISTS (SELECT 1 FROM dsync_users u WHERE u.directory_id = m.directory_id AND u.id = m.user_id);
ALTER TABLE dsync_group_members ADD CONSTRAINT dsync_group_members_directory_id_user_id_fkey
  FOREIGN KEY (directory_id, user_id) REFERENCES dsync_users (directory_id, id) ON DELETE CASCADE;
